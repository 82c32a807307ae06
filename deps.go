package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/repository"
)

// deps are the opened database and Redis clients of a serving process.
type deps struct {
	DB            *repository.DB
	Redis         redis.UniversalClient
	Nodes         []redis.UniversalClient // independent Redlock nodes
	EmbeddedRedis bool
	mini          *miniredis.Miniredis
	owned         []*redis.Client
}

func openDB(ctx context.Context, cfg config.Config) (*repository.DB, error) {
	if cfg.MySQLDSN == "" {
		return repository.OpenEmbedded(ctx, cfg.DataDir)
	}
	return repository.OpenMySQL(ctx, cfg.MySQLDSN)
}

// openDeps opens the database and Redis (embedded ones when not configured)
// and checks that each answers; an error names the variable at fault.
func openDeps(ctx context.Context, cfg config.Config, log *slog.Logger) (*deps, error) {
	d := &deps{}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.DB = db
	var target string // the variable and what it names, for a start-up error
	switch {
	case cfg.Cluster():
		// go-redis's cluster client: it learns the slots from the seed
		// nodes and sends each command to the master of its key's slot.
		// Every script and MULTI of this service names the keys of one
		// slot (repository/keys.go).
		d.Redis = repository.NewClusterRedisClient(cfg.RedisClusterAddrs)
		target = "SECKILL_REDIS_CLUSTER_ADDRS: " + strings.Join(cfg.RedisClusterAddrs, ",")
	case cfg.Sentinel():
		// go-redis's failover client: the master found through the
		// Sentinels and followed across failovers. It is a *redis.Client
		// like the plain one, so every user of d.Redis (locks, ID worker,
		// admission, stream consumers, reconciliation) works through it.
		d.Redis = repository.NewSentinelRedisClient(cfg.RedisMaster, cfg.RedisSentinelAddrs)
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
		d.Redis = repository.NewRedisClient(addr)
		target = "SECKILL_REDIS_ADDR: " + addr
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := d.Redis.Ping(pctx).Err(); err != nil {
		d.Close(log)
		return nil, fmt.Errorf("%s unreachable: %w", target, err)
	}
	// The Redlock nodes stay independent plain clients, Sentinel or not.
	for _, a := range cfg.RedlockAddrs {
		c := repository.NewRedlockNodeClient(a)
		d.owned = append(d.owned, c)
		if err := repository.PingRedis(ctx, c); err != nil {
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

// Ready checks that the database and Redis answer.
func (d *deps) Ready(ctx context.Context) error {
	if err := d.DB.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := repository.PingRedis(ctx, d.Redis); err != nil {
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
