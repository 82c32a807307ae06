package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"seckill/lua"
	"seckill/repository"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// The timeouts and pool of the service's Redis client, plain or
// Sentinel-managed: short enough that a dead Redis turns into 503 within
// the request deadline.
const (
	redisDialTimeout   = time.Second
	redisIOTimeout     = time.Second
	redisPoolSize      = 128
	redisMinIdleConns  = 8
	redisMaxRetries    = 1
	redisDialerRetries = 2
)

// RedisAuth are the credentials and TLS settings of every Redis client of
// the service: plain, Sentinel, Cluster and the Redlock nodes. The zero
// value is the default user without a password, over plain TCP.
type RedisAuth struct {
	Username string // ACL user; empty = the default user
	Password string
	// SentinelPassword is the Sentinels' own password (their
	// requirepass); only the Sentinel client uses it.
	SentinelPassword string
	// TLS, when set, is used for every connection, to the Sentinels too.
	// With an empty ServerName, crypto/tls checks the certificate against
	// the dialled host.
	TLS *tls.Config
}

// serviceOptions are the settings of the service's Redis client, whichever
// way it reaches Redis: timeouts short enough that a dead Redis turns into
// 503 within the request deadline, the request deadline bounding every
// call, and auth's credentials and TLS. Simple(), Failover() and Cluster()
// turn them into each client's options, so that every client is
// configured in one place.
func serviceOptions(addrs []string, master string, auth RedisAuth) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:            addrs,
		MasterName:       master,
		Username:         auth.Username,
		Password:         auth.Password,
		SentinelPassword: auth.SentinelPassword,
		TLSConfig:        auth.TLS,
		DialTimeout:      redisDialTimeout,
		ReadTimeout:      redisIOTimeout,
		WriteTimeout:     redisIOTimeout,
		PoolSize:         redisPoolSize,
		MinIdleConns:     redisMinIdleConns,
		MaxRetries:       redisMaxRetries,
		DialerRetries:    redisDialerRetries,
		// The request deadline bounds Redis calls too, not only ReadTimeout.
		ContextTimeoutEnabled: true,
	}
}

// NewRedisClient returns a go-redis client for addr with the service's
// settings (serviceOptions).
func NewRedisClient(addr string, auth RedisAuth) *redis.Client {
	return redis.NewClient(serviceOptions([]string{addr}, "", auth).Simple())
}

// NewSentinelRedisClient returns go-redis's failover client for the master
// named master, found through the Sentinels at sentinelAddrs, with the same
// settings as NewRedisClient. It is a *redis.Client like the plain one: it
// asks the Sentinels for the master's address when it dials, and on a
// failover (+switch-master) it drops its connections to the old master, so
// every user of the client follows the master without knowing.
func NewSentinelRedisClient(master string, sentinelAddrs []string, auth RedisAuth) *redis.Client {
	return redis.NewFailoverClient(serviceOptions(sentinelAddrs, master, auth).Failover())
}

// NewClusterRedisClient returns go-redis's Redis Cluster client, which
// learns the cluster's slots from the seed nodes at addrs and follows
// MOVED/ASK redirections, with the same settings as NewRedisClient (per
// node). It reloads the slot map every clusterReload: go-redis reloads it on
// MOVED and, by default, once a minute, and a master that died answers no
// MOVED, so without it the client kept sending to the dead master for up
// to a minute after its replica was promoted (seen in
// internal/redisproc's TestCluster).
func NewClusterRedisClient(addrs []string, auth RedisAuth) *redis.ClusterClient {
	o := serviceOptions(addrs, "", auth).Cluster()
	o.ClusterStateReloadInterval = clusterReload
	return redis.NewClusterClient(o)
}

// clusterReload is how often the cluster client reloads the slot map.
const clusterReload = time.Second

// NewRedlockNodeClient returns a client for one independent Redlock/MultiLock
// node: no command retries and a single dial attempt, so a dead node costs
// one refused dial, not half a second of redials, on every lock attempt.
// The nodes take the service's credentials and TLS: they are deployed and
// secured like its Redis, and separate secrets per node would be more
// settings for no gain.
func NewRedlockNodeClient(addr string, auth RedisAuth) *redis.Client {
	o := serviceOptions([]string{addr}, "", auth).Simple()
	o.DialTimeout = 500 * time.Millisecond
	o.MinIdleConns = 0
	o.MaxRetries = -1
	o.DialerRetries = 1
	return redis.NewClient(o)
}

// PingRedis checks that the client answers; the error names the address.
func PingRedis(ctx context.Context, c redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return model.Unavailable(err)
	}
	return nil
}

// redisErr maps go-redis errors: redis.Nil is not an error of this layer;
// connection problems (including a connection closed mid-reply: io.EOF)
// are model.ErrUnavailable.
func redisErr(err error) error {
	if err == nil {
		return nil
	}
	var netErr net.Error
	if isClusterUnavailable(err) {
		return model.Unavailable(err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, redis.ErrClosed) || errors.As(err, &netErr) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return model.Unavailable(err)
	}
	return fmt.Errorf("redis: %w", err)
}

// isClusterUnavailable reports the errors a Redis node answers while it
// cannot serve the key for now: a cluster without a master for some slots
// (CLUSTERDOWN, during a failover), a slot being moved (TRYAGAIN), a node
// loading its data (LOADING), a replica cut from its master (MASTERDOWN),
// or a write sent to a replica (READONLY: a demoted master).
func isClusterUnavailable(err error) bool {
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// Codes keeps login codes in Redis under login:code:<phone>, each with its
// count of wrong guesses ("<code>:<wrong>").
type Codes struct{ rdb redis.UniversalClient }

// NewCodes returns the code store.
func NewCodes(rdb redis.UniversalClient) *Codes { return &Codes{rdb: rdb} }

// SaveCode stores code for phone for ttl, with no wrong guesses. Redis
// errors are model.ErrUnavailable (the code flow needs Redis).
func (c *Codes) SaveCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	if err := c.rdb.Set(ctx, repository.LoginCodeKey(phone), code+":0", ttl).Err(); err != nil {
		return model.Unavailable(err)
	}
	return nil
}

// CheckCode compares code with phone's code atomically (check_code.lua): ok on
// a match, which deletes it; a wrong guess is counted and the maxWrong-th
// deletes the code; no code is not ok. Redis errors are
// model.ErrUnavailable.
func (c *Codes) CheckCode(ctx context.Context, phone, code string, maxWrong int) (bool, error) {
	n, err := lua.CheckCode.Run(ctx, c.rdb, codeKeys(phone), code, maxWrong).Int()
	if err != nil {
		return false, model.Unavailable(err)
	}
	return n == 1, nil
}

// Rejections counts unique-key rejections per voucher in Redis
// (seckill:duprej:<voucherId>), shared by every instance.
type Rejections struct{ rdb redis.UniversalClient }

// NewRejections returns the counter.
func NewRejections(rdb redis.UniversalClient) *Rejections { return &Rejections{rdb: rdb} }

// IncrDuplicateRejections adds one rejection.
func (r *Rejections) IncrDuplicateRejections(ctx context.Context, voucherID int64) error {
	return redisErr(r.rdb.Incr(ctx, repository.DuplicateRejectionsKey(voucherID)).Err())
}

// DuplicateRejections returns the count (0 when none).
func (r *Rejections) DuplicateRejections(ctx context.Context, voucherID int64) (int64, error) {
	n, err := r.rdb.Get(ctx, repository.DuplicateRejectionsKey(voucherID)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, redisErr(err)
}
