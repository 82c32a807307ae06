package redisstore

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// The timeouts and pool of the service's Redis client, plain or
// Sentinel-managed. They are short, so a dead Redis turns into 503 within
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
	Username string // ACL user. Empty = the default user
	Password string
	// SentinelPassword is the Sentinels' own password (their
	// requirepass). Only the Sentinel client uses it.
	SentinelPassword string
	// TLS, when set, is used for every connection, to the Sentinels too.
	// With an empty ServerName, crypto/tls checks the certificate against
	// the dialled host.
	TLS *tls.Config
}

// serviceOptions are the settings of the service's Redis client, whichever
// way it reaches Redis. Its timeouts are short, so a dead Redis turns into
// 503 within the request deadline. The request deadline bounds every call.
// auth adds the credentials and TLS. Simple(), Failover() and Cluster()
// turn them into each client's options. So every client is configured in
// one place.
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
// named master. It finds the master through the Sentinels at sentinelAddrs.
// Its settings are NewRedisClient's, and it is a *redis.Client too. It asks
// the Sentinels for the master's address when it dials. On a failover
// (+switch-master) it drops its connections to the old master. So every
// user of the client follows the master.
func NewSentinelRedisClient(master string, sentinelAddrs []string, auth RedisAuth) *redis.Client {
	return redis.NewFailoverClient(serviceOptions(sentinelAddrs, master, auth).Failover())
}

// NewClusterRedisClient returns go-redis's Redis Cluster client, with
// NewRedisClient's settings per node. It learns the slots from the seed
// nodes at addrs and follows MOVED and ASK. It also reloads the slot map
// every clusterReload. go-redis reloads it on MOVED and once a minute, but
// a dead master answers no MOVED. Without the reload, the client kept
// sending to a dead master for up to a minute after the failover
// (testkit/redisproc's TestCluster).
func NewClusterRedisClient(addrs []string, auth RedisAuth) *redis.ClusterClient {
	o := serviceOptions(addrs, "", auth).Cluster()
	o.ClusterStateReloadInterval = clusterReload
	return redis.NewClusterClient(o)
}

// clusterReload is how often the cluster client reloads the slot map.
const clusterReload = time.Second

// NewRedlockNodeClient returns a client for one independent
// Redlock/MultiLock node. It has no command retries and a single dial
// attempt. So a dead node costs one refused dial per lock attempt, not half
// a second of redials. The nodes take the service's credentials and TLS.
// They are deployed and secured like its Redis. Separate secrets per node
// would be more settings for no gain.
func NewRedlockNodeClient(addr string, auth RedisAuth) *redis.Client {
	o := serviceOptions([]string{addr}, "", auth).Simple()
	o.DialTimeout = 500 * time.Millisecond
	o.MinIdleConns = 0
	o.MaxRetries = -1
	o.DialerRetries = 1
	return redis.NewClient(o)
}

// PingRedis checks that the client answers. The error names the address.
func PingRedis(ctx context.Context, c redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return model.Unavailable(err)
	}
	return nil
}
