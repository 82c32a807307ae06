package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
)

// deps are the opened database and Redis clients of a serving process.
type deps struct {
	DB            *sqlstore.DB
	Redis         redis.UniversalClient
	Nodes         []redis.UniversalClient // independent Redlock nodes
	EmbeddedRedis bool
	mini          *miniredis.Miniredis
	owned         []*redis.Client
}

func openDB(ctx context.Context, cfg config.Config) (*sqlstore.DB, error) {
	if cfg.MySQLDSN == "" {
		return sqlstore.OpenEmbedded(ctx, cfg.DataDir)
	}
	return sqlstore.OpenMySQL(ctx, cfg.MySQLDSN)
}

// openDeps opens the database and Redis (embedded ones when not configured)
// and checks that each answers. An error names the variable at fault.
func openDeps(ctx context.Context, cfg config.Config, log *slog.Logger) (*deps, error) {
	auth, err := redisAuth(cfg)
	if err != nil {
		return nil, err
	}
	d := &deps{}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.DB = db
	var target string // the variable and what it names, for a start-up error
	switch {
	case cfg.Cluster():
		// go-redis's cluster client learns the slots from the seed nodes. It
		// sends each command to the master of its key's slot. Every script and
		// MULTI here names the keys of one slot (repository/redisstore/keys.go).
		d.Redis = redisstore.NewClusterRedisClient(cfg.RedisClusterAddrs, auth)
		target = "SECKILL_REDIS_CLUSTER_ADDRS: " + strings.Join(cfg.RedisClusterAddrs, ",")
	case cfg.Sentinel():
		// go-redis's failover client: the master found through the Sentinels
		// and followed across failovers. It is a *redis.Client like the plain
		// one. So locks, ID worker, admission, consumers and reconciliation
		// all work through it.
		d.Redis = redisstore.NewSentinelRedisClient(cfg.RedisMaster, cfg.RedisSentinelAddrs, auth)
		target = fmt.Sprintf("SECKILL_REDIS_SENTINEL_ADDRS: master %q through the Sentinels %s",
			cfg.RedisMaster, strings.Join(cfg.RedisSentinelAddrs, ","))
	default:
		addr := cfg.RedisAddr
		if addr == "" {
			d.mini = miniredis.NewMiniRedis()
			// Leases must follow the wall clock, or locks would never expire.
			d.mini.ClockTTL(true)
			if err := d.mini.Start(); err != nil {
				d.Close(log)
				return nil, fmt.Errorf("embedded redis: %w", err)
			}
			addr, d.EmbeddedRedis = d.mini.Addr(), true
		}
		// auth is empty with the embedded Redis (config refuses it otherwise).
		d.Redis = redisstore.NewRedisClient(addr, auth)
		target = "SECKILL_REDIS_ADDR: " + addr
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := d.Redis.Ping(pctx).Err(); err != nil {
		d.Close(log)
		return nil, redisStartErr(cfg, target, err)
	}
	// The Redlock nodes stay independent plain clients, Sentinel or not,
	// with the same credentials and TLS.
	for _, a := range cfg.RedlockAddrs {
		c := redisstore.NewRedlockNodeClient(a, auth)
		d.owned = append(d.owned, c)
		if err := redisstore.PingRedis(ctx, c); err != nil {
			// A node down is an outage the lock tolerates. Refused
			// credentials are a configuration error.
			if v := redisCredentialVar(cfg, err); v != "" {
				d.Close(log)
				return nil, fmt.Errorf("%s: refused by the Redlock node %s (SECKILL_REDLOCK_ADDRS): %v", v, a, err)
			}
			log.WarnContext(ctx, "redlock node unreachable at start", "addr", a, "err", err)
		}
		d.Nodes = append(d.Nodes, c)
	}
	if len(d.Nodes) == 0 {
		d.Nodes = []redis.UniversalClient{d.Redis}
	}
	if d.DB.Embedded || d.EmbeddedRedis {
		log.InfoContext(ctx, "embedded backends in use", "database", d.DB.Embedded, "redis", d.EmbeddedRedis, "data_dir", cfg.DataDir)
	}
	return d, nil
}

// redisAuth is the credentials and TLS of every Redis client of cfg. It
// reads SECKILL_REDIS_TLS_CA, once.
func redisAuth(cfg config.Config) (redisstore.RedisAuth, error) {
	t, err := cfg.RedisTLSConfig()
	if err != nil {
		return redisstore.RedisAuth{}, err
	}
	return redisstore.RedisAuth{
		Username:         cfg.RedisUsername,
		Password:         cfg.RedisPassword,
		SentinelPassword: cfg.RedisSentinelPassword,
		TLS:              t,
	}, nil
}

// redisStartErr is the start-up error of a Redis that did not answer PING at
// target. It names the credential or TLS variable when the server refused
// those. Otherwise it names the address variable.
func redisStartErr(cfg config.Config, target string, err error) error {
	if v := redisCredentialVar(cfg, err); v != "" {
		return fmt.Errorf("%s: refused by Redis (%s): %v", v, target, err)
	}
	if cfg.RedisTLS {
		// A TLS client on a plain port waits for a handshake that never comes.
		return fmt.Errorf("%s unreachable over TLS (SECKILL_REDIS_TLS): %w", target, err)
	}
	return fmt.Errorf("%s unreachable: %w", target, err)
}

// redisCredentialVar names the variable at fault, or returns "". It names one
// when Redis refused the credentials or a certificate from an unknown CA.
func redisCredentialVar(cfg config.Config, err error) string {
	var unknownCA x509.UnknownAuthorityError
	switch {
	case cfg.Sentinel() && strings.Contains(err.Error(), "sentinels") && isRedisAuthErr(err):
		// go-redis reports a Sentinel that refused it this way.
		return "SECKILL_REDIS_SENTINEL_PASSWORD"
	case isRedisAuthErr(err) && cfg.RedisUsername != "":
		return "SECKILL_REDIS_USERNAME/SECKILL_REDIS_PASSWORD"
	case isRedisAuthErr(err):
		return "SECKILL_REDIS_PASSWORD"
	case errors.As(err, &unknownCA):
		return "SECKILL_REDIS_TLS_CA"
	}
	return ""
}

// isRedisAuthErr reports Redis refusing the credentials. Either none were
// given where required (NOAUTH), or wrong ones (WRONGPASS). A server without a
// password accepts any (its default user).
func isRedisAuthErr(err error) bool { return redis.IsAuthError(err) }

// Ready checks that the database and Redis answer.
func (d *deps) Ready(ctx context.Context) error {
	if err := d.DB.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := redisstore.PingRedis(ctx, d.Redis); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Close closes Redis, the Redlock nodes and the database, in that order.
func (d *deps) Close(log *slog.Logger) {
	for _, c := range d.owned {
		if err := c.Close(); err != nil {
			log.Warn("close redlock node", "err", err)
		}
	}
	if d.Redis != nil {
		if err := d.Redis.Close(); err != nil {
			log.Warn("close redis", "err", err)
		}
	}
	if d.mini != nil {
		d.mini.Close()
	}
	if d.DB != nil {
		if err := d.DB.Close(); err != nil {
			log.Warn("close database", "err", err)
		}
	}
}
