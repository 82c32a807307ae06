// Package config reads the typed configuration of the seckill service: the
// defaults below, then the environment (SECKILL_*), then validation.
package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DevJWTSecret is the development secret used when SECKILL_JWT_SECRET is empty
// outside production. It is public: never use it for real users.
const DevJWTSecret = "seckill-development-secret-do-not-use-in-production"

// MinJWTSecret is the shortest JWT secret production accepts: 32 bytes, the
// size of an HMAC-SHA256 key (`openssl rand -hex 32` makes one of 64).
const MinJWTSecret = 32

// The listen addresses when SECKILL_HTTP_ADDR is unset: development serves
// this machine only, production every interface.
const (
	DevHTTPAddr        = "127.0.0.1:8080"
	ProductionHTTPAddr = ":8080"
)

// Lock modes accepted by SECKILL_LOCK_MODE.
var LockModes = []string{"none", "local", "simple", "owner", "lua", "reentrant", "redsync", "multi", "mysql", "zookeeper"}

// APIStyles are the values of SECKILL_API_STYLE: rest (refusals carry their
// HTTP status) and heima (the course frontend's 200 with success:false).
var APIStyles = []string{"rest", "heima"}

// Config is the whole configuration of one process.
type Config struct {
	HTTPAddr           string        // SECKILL_HTTP_ADDR, default "127.0.0.1:8080" in development, ":8080" in production
	MySQLDSN           string        // SECKILL_MYSQL_DSN, empty = embedded database
	DataDir            string        // SECKILL_DATA_DIR, default "./data" (embedded database)
	RedisAddr          string        // SECKILL_REDIS_ADDR, empty = embedded Redis (unless Sentinel)
	RedisSentinelAddrs []string      // SECKILL_REDIS_SENTINEL_ADDRS: Sentinels to ask for the master, instead of SECKILL_REDIS_ADDR
	RedisMaster        string        // SECKILL_REDIS_MASTER: the master's name at the Sentinels
	RedisClusterAddrs  []string      // SECKILL_REDIS_CLUSTER_ADDRS: seed nodes of a Redis Cluster, instead of SECKILL_REDIS_ADDR
	StockBuckets       int           // SECKILL_STOCK_BUCKETS, buckets of a voucher published without stockBuckets (async mode), 1 to 16, default 1
	LockMode           string        // SECKILL_LOCK_MODE, default "lua"
	LockTTL            time.Duration // SECKILL_LOCK_TTL, lease of the per-user lock, default 10s
	LockWaitReplicas   int           // SECKILL_LOCK_WAIT_REPLICAS, replicas that must acknowledge each grant (lua, reentrant), default 0 = off
	LockWaitTimeout    time.Duration // SECKILL_LOCK_WAIT_TIMEOUT, bound of that WAIT, default 100ms
	RedlockAddrs       []string      // SECKILL_REDLOCK_ADDRS, default: the one Redis
	ZKAddrs            []string      // SECKILL_ZK_ADDRS
	OrderMode          string        // SECKILL_ORDER_MODE, "sync" or "async", default "sync"
	Fencing            bool          // SECKILL_FENCING, "on" or "off", default off
	// SyncGroupCommit commits concurrent sync buyers of a voucher in one
	// transaction (SECKILL_SYNC_GROUP_COMMIT, "on" or "off", default on;
	// off = one transaction per order, the course's path).
	SyncGroupCommit bool
	JWTSecret       string        // SECKILL_JWT_SECRET
	JWTTTL          time.Duration // SECKILL_JWT_TTL, default 24h
	// Env is SECKILL_ENV, "development" or "production". Unset, it is
	// development only when both backends are embedded (no SECKILL_MYSQL_DSN,
	// no SECKILL_REDIS_ADDR and no Sentinel: trying the product on one
	// machine) and production otherwise. Development means the public JWT
	// secret, login codes in responses, pprof, /debug/noop and the
	// SECKILL_DEV_* delays.
	Env string
	// RequestTimeout bounds every request (SECKILL_REQUEST_TIMEOUT, default 3s):
	// a dependency that hangs turns into 503 UNAVAILABLE, never a hang.
	RequestTimeout time.Duration
	// CriticalDelay is a development-only pause inside the critical section,
	// after the lock is taken and before the order transaction
	// (SECKILL_DEV_CRITICAL_DELAY, default 0). Load tests set it longer than
	// the lock lease to show which lock designs break.
	CriticalDelay time.Duration
	// The purchase limits, per second over every instance (Redis, GCRA),
	// each 0 = no limit (the default); the rest get 429 RATE_LIMITED:
	// RateLimit per user (SECKILL_RATE_LIMIT), RateLimitVoucher per
	// voucher (SECKILL_RATE_LIMIT_VOUCHER), RateLimitIP per client
	// address (SECKILL_RATE_LIMIT_IP; see TrustedProxies).
	RateLimit        int
	RateLimitVoucher int
	RateLimitIP      int
	// Consumers is the number of stream consumers per process in async mode
	// (SECKILL_CONSUMERS, default 1; 0 here means the default).
	Consumers int
	// ConsumerDuty is the most of its time an async consumer spends on a
	// backlog while its process admits orders (SECKILL_CONSUMER_DUTY, a
	// fraction from 0.05 to 1; 1 never yields), so that admissions keep
	// the CPU during a burst and the backlog is written in the gaps and
	// after it.
	ConsumerDuty float64
	// ClaimIdle is how long an order may stay pending with a consumer
	// before another consumer claims it, presuming the first dead
	// (SECKILL_CLAIM_IDLE, default 30s; 0 here means the default). Keep it
	// longer than a batch takes (at most 8s).
	ClaimIdle time.Duration
	// ConsumerDelay is a development-only pause of each consumer batch after
	// it is read and before it is written, so that orders stay pending
	// (SECKILL_DEV_CONSUMER_DELAY, default 0): the crash test kills an
	// instance holding them.
	ConsumerDelay time.Duration
	// AutoRebuildAfter is how long a live voucher of async mode stays
	// refused (unsafe) after Redis lost its data under the running service
	// before the service rebuilds it from the facts by itself
	// (SECKILL_AUTO_REBUILD_AFTER, default 10s; 0 = never: the operator
	// runs `seckill rebuild`). At least the consumers' batch timeout (8s),
	// so that no batch that read entries before the loss is still writing.
	AutoRebuildAfter time.Duration
	// APIStyle is how refusals reach the client (SECKILL_API_STYLE, "rest"
	// or "heima", default "rest"): heima answers business refusals and
	// input errors with HTTP 200 and success:false in the course's words.
	APIStyle string
	// AccessLog is the most request lines logged per second, per
	// instance (SECKILL_ACCESS_LOG, default 20; 0 turns the log off).
	// Lines beyond it are counted, not written: under load it is a sample.
	AccessLog int
	// PayTimeout is how long an order may stay unpaid before the service
	// cancels it and puts its unit back on sale (SECKILL_PAY_TIMEOUT,
	// default 15m, at least 1s).
	PayTimeout time.Duration
	// CodeCooldown is the least time between two login codes to one phone
	// (SECKILL_CODE_COOLDOWN, default 60s, at least 1s).
	CodeCooldown time.Duration
	// CodeDailyLimit is how many login codes one phone gets per 24 h
	// (SECKILL_CODE_DAILY_LIMIT, default 10).
	CodeDailyLimit int
	// CodeIPLimit is how many login codes one client address may ask for
	// per minute, over every instance (SECKILL_CODE_IP_LIMIT, default 30;
	// 0 = no limit).
	CodeIPLimit int
	// TrustedProxies are the proxies (CIDRs or IPs) whose X-Forwarded-For
	// names the client address (SECKILL_TRUSTED_PROXIES, default none:
	// the client is the connection's peer).
	TrustedProxies []string
	// The credentials and TLS of every Redis connection (single, Sentinel,
	// Cluster and the Redlock nodes): SECKILL_REDIS_USERNAME (ACL user,
	// empty = the default user), SECKILL_REDIS_PASSWORD, and for Sentinel
	// the Sentinels' own SECKILL_REDIS_SENTINEL_PASSWORD.
	RedisUsername         string
	RedisPassword         string
	RedisSentinelPassword string
	// RedisTLS is SECKILL_REDIS_TLS, "on" or "off", default off; a
	// SECKILL_REDIS_TLS_CA (RedisTLSCA: PEM file of the CA to trust instead
	// of the system's) turns it on.
	RedisTLS   bool
	RedisTLSCA string
	// Tracing is OpenTelemetry tracing, on when OTEL_EXPORTER_OTLP_ENDPOINT
	// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set or OTEL_TRACES_EXPORTER
	// names an exporter other than "none", unless OTEL_SDK_DISABLED=true.
	// The other OTEL_* variables (sampler, service name, protocol) are
	// the OpenTelemetry SDK's own.
	Tracing bool
}

// Defaults of async mode that the zero values of Config stand for.
const (
	DefaultConsumers = 1
	DefaultClaimIdle = 30 * time.Second
	// DefaultConsumerDuty: a consumer spends at most a quarter of its time
	// on a backlog while its process admits orders.
	DefaultConsumerDuty = 0.25
)

// ConsumerCount returns Consumers, or its default when unset.
func (c *Config) ConsumerCount() int {
	if c.Consumers <= 0 {
		return DefaultConsumers
	}
	return c.Consumers
}

// ClaimIdleOrDefault returns ClaimIdle, or its default when unset.
func (c *Config) ClaimIdleOrDefault() time.Duration {
	if c.ClaimIdle <= 0 {
		return DefaultClaimIdle
	}
	return c.ClaimIdle
}

// Environments accepted by SECKILL_ENV.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// Default returns the configuration with every default filled in (both
// backends embedded, hence development).
func Default() Config {
	return Config{
		HTTPAddr:         DevHTTPAddr,
		DataDir:          "./data",
		LockMode:         "lua",
		LockTTL:          10 * time.Second,
		LockWaitTimeout:  100 * time.Millisecond,
		AutoRebuildAfter: 10 * time.Second,
		OrderMode:        "sync",
		SyncGroupCommit:  true,
		JWTTTL:           24 * time.Hour,
		Env:              EnvDevelopment,
		RequestTimeout:   3 * time.Second,
		APIStyle:         "rest",
		ConsumerDuty:     DefaultConsumerDuty,
		CodeCooldown:     time.Minute,
		AccessLog:        20,
		PayTimeout:       15 * time.Minute,
		CodeDailyLimit:   10,
		CodeIPLimit:      30,
	}
}

// DefaultEnv is the environment when SECKILL_ENV is unset: development only
// when both backends are embedded, production as soon as either is real.
// redisAddr is any non-empty string for a real Redis (plain or Sentinel).
func DefaultEnv(mysqlDSN, redisAddr string) string {
	if mysqlDSN == "" && redisAddr == "" {
		return EnvDevelopment
	}
	return EnvProduction
}

// RealRedis reports whether a real Redis is configured, plain
// (SECKILL_REDIS_ADDR), Sentinel-managed (SECKILL_REDIS_SENTINEL_ADDRS) or
// a cluster (SECKILL_REDIS_CLUSTER_ADDRS); otherwise the process runs an
// embedded one.
func (c *Config) RealRedis() bool {
	return c.RedisAddr != "" || len(c.RedisSentinelAddrs) > 0 || c.Cluster()
}

// Cluster reports whether Redis is a Redis Cluster.
func (c *Config) Cluster() bool { return len(c.RedisClusterAddrs) > 0 }

// Sentinel reports whether Redis is Sentinel-managed.
func (c *Config) Sentinel() bool { return len(c.RedisSentinelAddrs) > 0 }

// Development reports whether development behaviour is on.
func (c *Config) Development() bool { return c.Env == EnvDevelopment }

// Load returns Default overridden by the environment, validated. Errors name
// the variable at fault.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	c.HTTPAddr = ""
	var errs []error
	dur := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration like 10s", name, v))
			return
		}
		*dst = d
	}
	str("SECKILL_HTTP_ADDR", &c.HTTPAddr)
	str("SECKILL_MYSQL_DSN", &c.MySQLDSN)
	str("SECKILL_DATA_DIR", &c.DataDir)
	str("SECKILL_REDIS_ADDR", &c.RedisAddr)
	c.RedisSentinelAddrs = list(getenv("SECKILL_REDIS_SENTINEL_ADDRS"))
	str("SECKILL_REDIS_MASTER", &c.RedisMaster)
	c.RedisClusterAddrs = list(getenv("SECKILL_REDIS_CLUSTER_ADDRS"))
	str("SECKILL_REDIS_USERNAME", &c.RedisUsername)
	// Passwords are taken as given: spaces may be part of them.
	c.RedisPassword = getenv("SECKILL_REDIS_PASSWORD")
	c.RedisSentinelPassword = getenv("SECKILL_REDIS_SENTINEL_PASSWORD")
	switch v := strings.ToLower(strings.TrimSpace(getenv("SECKILL_REDIS_TLS"))); v {
	case "", "off":
	case "on":
		c.RedisTLS = true
	default:
		errs = append(errs, fmt.Errorf("SECKILL_REDIS_TLS: %q is not on or off", v))
	}
	str("SECKILL_REDIS_TLS_CA", &c.RedisTLSCA)
	if c.RedisTLSCA != "" {
		c.RedisTLS = true
	}
	if v := strings.TrimSpace(getenv("SECKILL_STOCK_BUCKETS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 16 {
			errs = append(errs, fmt.Errorf("SECKILL_STOCK_BUCKETS: %q is not a number from 1 to 16", v))
		} else {
			c.StockBuckets = n
		}
	}
	str("SECKILL_LOCK_MODE", &c.LockMode)
	str("SECKILL_ORDER_MODE", &c.OrderMode)
	str("SECKILL_JWT_SECRET", &c.JWTSecret)
	str("SECKILL_API_STYLE", &c.APIStyle)
	redis := c.RedisAddr
	if c.Sentinel() {
		redis = strings.Join(c.RedisSentinelAddrs, ",")
	}
	if c.Cluster() {
		redis = strings.Join(c.RedisClusterAddrs, ",")
	}
	c.Env = DefaultEnv(c.MySQLDSN, redis)
	str("SECKILL_ENV", &c.Env)
	if c.HTTPAddr == "" {
		c.HTTPAddr = DevHTTPAddr
		if c.Env == EnvProduction {
			c.HTTPAddr = ProductionHTTPAddr
		}
	}
	dur("SECKILL_LOCK_TTL", &c.LockTTL)
	dur("SECKILL_LOCK_WAIT_TIMEOUT", &c.LockWaitTimeout)
	if v := strings.TrimSpace(getenv("SECKILL_LOCK_WAIT_REPLICAS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("SECKILL_LOCK_WAIT_REPLICAS: %q is not a whole number ≥ 0", v))
		}
		c.LockWaitReplicas = n
	}
	dur("SECKILL_JWT_TTL", &c.JWTTTL)
	dur("SECKILL_REQUEST_TIMEOUT", &c.RequestTimeout)
	dur("SECKILL_PAY_TIMEOUT", &c.PayTimeout)
	dur("SECKILL_DEV_CRITICAL_DELAY", &c.CriticalDelay)
	dur("SECKILL_CODE_COOLDOWN", &c.CodeCooldown)
	for _, v := range []struct {
		name string
		dst  *int
		min  int
	}{
		{"SECKILL_RATE_LIMIT", &c.RateLimit, 0}, {"SECKILL_RATE_LIMIT_VOUCHER", &c.RateLimitVoucher, 0},
		{"SECKILL_RATE_LIMIT_IP", &c.RateLimitIP, 0},
		{"SECKILL_CODE_DAILY_LIMIT", &c.CodeDailyLimit, 1}, {"SECKILL_CODE_IP_LIMIT", &c.CodeIPLimit, 0},
		{"SECKILL_ACCESS_LOG", &c.AccessLog, 0},
	} {
		if s := strings.TrimSpace(getenv(v.name)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < v.min {
				errs = append(errs, fmt.Errorf("%s: %q is not a whole number ≥ %d", v.name, s, v.min))
			} else {
				*v.dst = n
			}
		}
	}
	c.TrustedProxies = list(getenv("SECKILL_TRUSTED_PROXIES"))
	c.Tracing = tracingOn(getenv)
	dur("SECKILL_CLAIM_IDLE", &c.ClaimIdle)
	dur("SECKILL_DEV_CONSUMER_DELAY", &c.ConsumerDelay)
	dur("SECKILL_AUTO_REBUILD_AFTER", &c.AutoRebuildAfter)
	if v := strings.TrimSpace(getenv("SECKILL_CONSUMERS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			errs = append(errs, fmt.Errorf("SECKILL_CONSUMERS: %q is not a number from 1 to 64", v))
		} else {
			c.Consumers = n
		}
	}
	if v := strings.TrimSpace(getenv("SECKILL_CONSUMER_DUTY")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0.05 && f <= 1) {
			errs = append(errs, fmt.Errorf("SECKILL_CONSUMER_DUTY: %q is not a fraction from 0.05 to 1", v))
		} else {
			c.ConsumerDuty = f
		}
	}
	c.RedlockAddrs = list(getenv("SECKILL_REDLOCK_ADDRS"))
	c.ZKAddrs = list(getenv("SECKILL_ZK_ADDRS"))
	switch v := strings.ToLower(strings.TrimSpace(getenv("SECKILL_FENCING"))); v {
	case "", "off":
	case "on":
		c.Fencing = true
	default:
		errs = append(errs, fmt.Errorf("SECKILL_FENCING: %q is not on or off", v))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("SECKILL_SYNC_GROUP_COMMIT"))); v {
	case "", "on":
	case "off":
		c.SyncGroupCommit = false
	default:
		errs = append(errs, fmt.Errorf("SECKILL_SYNC_GROUP_COMMIT: %q is not on or off", v))
	}
	if len(errs) > 0 {
		return c, oneLine(errs)
	}
	return c, c.Validate()
}

// Validate checks the configuration; each error names its variable.
func (c *Config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil || (port != "0" && !validPort(port)) {
		errs = append(errs, fmt.Errorf("SECKILL_HTTP_ADDR: %q is not host:port", c.HTTPAddr))
	}
	if c.MySQLDSN != "" {
		if _, err := mysql.ParseDSN(c.MySQLDSN); err != nil {
			errs = append(errs, fmt.Errorf("SECKILL_MYSQL_DSN: malformed: %v", err))
		}
	}
	if c.RedisAddr != "" && !validHostPort(c.RedisAddr) {
		errs = append(errs, fmt.Errorf("SECKILL_REDIS_ADDR: %q is not host:port", c.RedisAddr))
	}
	if c.RedisAddr != "" && c.Sentinel() {
		errs = append(errs, errors.New("SECKILL_REDIS_SENTINEL_ADDRS: set together with SECKILL_REDIS_ADDR; set only one of them (Sentinel-managed or a single Redis)"))
	}
	if c.Cluster() && (c.RedisAddr != "" || c.Sentinel()) {
		errs = append(errs, errors.New("SECKILL_REDIS_CLUSTER_ADDRS: set together with SECKILL_REDIS_ADDR or SECKILL_REDIS_SENTINEL_ADDRS; set only one of the three (a single Redis, Sentinel-managed, or a Redis Cluster)"))
	}
	for _, a := range c.RedisClusterAddrs {
		if !validHostPort(a) {
			errs = append(errs, fmt.Errorf("SECKILL_REDIS_CLUSTER_ADDRS: %q is not host:port", a))
		}
	}
	for _, a := range c.RedisSentinelAddrs {
		if !validHostPort(a) {
			errs = append(errs, fmt.Errorf("SECKILL_REDIS_SENTINEL_ADDRS: %q is not host:port", a))
		}
	}
	if c.RedisUsername != "" && c.RedisPassword == "" {
		errs = append(errs, errors.New("SECKILL_REDIS_PASSWORD: required with SECKILL_REDIS_USERNAME (an ACL user logs in with its password)"))
	}
	if c.RedisSentinelPassword != "" && !c.Sentinel() {
		errs = append(errs, errors.New("SECKILL_REDIS_SENTINEL_PASSWORD: only with SECKILL_REDIS_SENTINEL_ADDRS"))
	}
	// The embedded Redis has neither a password nor TLS: refuse rather
	// than ignore them.
	if c.RedisPassword != "" && !c.RealRedis() {
		errs = append(errs, errors.New("SECKILL_REDIS_PASSWORD: only with a real Redis (SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS)"))
	}
	if c.RedisTLS && !c.RealRedis() {
		errs = append(errs, errors.New("SECKILL_REDIS_TLS: only with a real Redis (SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS)"))
	}
	if c.Sentinel() && c.RedisMaster == "" {
		errs = append(errs, errors.New("SECKILL_REDIS_MASTER: required with SECKILL_REDIS_SENTINEL_ADDRS (the name the Sentinels monitor the master under)"))
	}
	if !c.Sentinel() && c.RedisMaster != "" {
		errs = append(errs, errors.New("SECKILL_REDIS_SENTINEL_ADDRS: required with SECKILL_REDIS_MASTER (the Sentinels to ask for the master)"))
	}
	for _, a := range c.RedlockAddrs {
		if !validHostPort(a) {
			errs = append(errs, fmt.Errorf("SECKILL_REDLOCK_ADDRS: %q is not host:port", a))
		}
	}
	for _, a := range c.ZKAddrs {
		if !validHostPort(a) {
			errs = append(errs, fmt.Errorf("SECKILL_ZK_ADDRS: %q is not host:port", a))
		}
	}
	if !contains(LockModes, c.LockMode) {
		errs = append(errs, fmt.Errorf("SECKILL_LOCK_MODE: unknown mode %q (one of %s)", c.LockMode, strings.Join(LockModes, ", ")))
	}
	if c.LockMode == "zookeeper" && len(c.ZKAddrs) == 0 {
		errs = append(errs, errors.New("SECKILL_ZK_ADDRS: required with SECKILL_LOCK_MODE=zookeeper"))
	}
	if c.LockMode == "mysql" && c.MySQLDSN == "" {
		errs = append(errs, errors.New("SECKILL_MYSQL_DSN: required with SECKILL_LOCK_MODE=mysql (the embedded database has no GET_LOCK)"))
	}
	if !contains(APIStyles, c.APIStyle) {
		errs = append(errs, fmt.Errorf("SECKILL_API_STYLE: unknown style %q (rest or heima)", c.APIStyle))
	}
	if c.OrderMode != "sync" && c.OrderMode != "async" {
		errs = append(errs, fmt.Errorf("SECKILL_ORDER_MODE: unknown mode %q (sync or async)", c.OrderMode))
	}
	if c.Env != EnvDevelopment && c.Env != EnvProduction {
		errs = append(errs, fmt.Errorf("SECKILL_ENV: %q is not development or production", c.Env))
	}
	if c.Env == EnvProduction {
		switch {
		case c.JWTSecret == "":
			errs = append(errs, fmt.Errorf("SECKILL_JWT_SECRET: required in production (the default with a real SECKILL_MYSQL_DSN, SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS); make one with `openssl rand -hex 32` (at least %d bytes); SECKILL_ENV=development allows the public development secret", MinJWTSecret))
		case c.JWTSecret == DevJWTSecret:
			errs = append(errs, errors.New("SECKILL_JWT_SECRET: the public development secret is not allowed in production; make one with `openssl rand -hex 32`"))
		case len(c.JWTSecret) < MinJWTSecret:
			errs = append(errs, fmt.Errorf("SECKILL_JWT_SECRET: %d bytes, production needs at least %d; make one with `openssl rand -hex 32`", len(c.JWTSecret), MinJWTSecret))
		}
		if c.MySQLDSN == "" {
			errs = append(errs, errors.New("SECKILL_MYSQL_DSN: required in production (the embedded database is for trying the product on one machine; SECKILL_ENV=development allows it)"))
		}
		if !c.RealRedis() {
			errs = append(errs, errors.New("SECKILL_REDIS_ADDR: a real Redis is required in production (SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS; the embedded one is for trying the product on one machine; SECKILL_ENV=development allows it)"))
		}
		if c.CriticalDelay > 0 {
			errs = append(errs, errors.New("SECKILL_DEV_CRITICAL_DELAY: development only, not allowed when SECKILL_ENV=production"))
		}
		if c.ConsumerDelay > 0 {
			errs = append(errs, errors.New("SECKILL_DEV_CONSUMER_DELAY: development only, not allowed when SECKILL_ENV=production"))
		}
	}
	if c.LockTTL <= 0 {
		errs = append(errs, errors.New("SECKILL_LOCK_TTL: must be positive"))
	}
	if c.LockWaitReplicas < 0 {
		errs = append(errs, errors.New("SECKILL_LOCK_WAIT_REPLICAS: must be 0 or more"))
	}
	if c.LockWaitReplicas > 0 && c.LockMode != "lua" && c.LockMode != "reentrant" {
		errs = append(errs, fmt.Errorf("SECKILL_LOCK_WAIT_REPLICAS: only with SECKILL_LOCK_MODE=lua or reentrant, not %q", c.LockMode))
	}
	if c.LockWaitReplicas > 0 && c.Cluster() {
		errs = append(errs, errors.New("SECKILL_LOCK_WAIT_REPLICAS: not with SECKILL_REDIS_CLUSTER_ADDRS (WAIT must follow the grant on the master's connection; the cluster client sends a command without a key to any node)"))
	}
	if c.LockWaitTimeout <= 0 {
		errs = append(errs, errors.New("SECKILL_LOCK_WAIT_TIMEOUT: must be positive"))
	}
	if c.JWTTTL <= 0 {
		errs = append(errs, errors.New("SECKILL_JWT_TTL: must be positive"))
	}
	if c.Consumers < 0 || c.Consumers > 64 {
		errs = append(errs, errors.New("SECKILL_CONSUMERS: must be from 1 to 64"))
	}
	if c.ClaimIdle < 0 || (c.ClaimIdle > 0 && c.ClaimIdle < 8*time.Second) {
		// 8s is the consumers' batch timeout: an entry claimed while its
		// batch still runs would be handled by two consumers at once.
		errs = append(errs, errors.New("SECKILL_CLAIM_IDLE: must be at least 8s (the consumers' batch timeout)"))
	}
	if c.AutoRebuildAfter < 0 || (c.AutoRebuildAfter > 0 && c.AutoRebuildAfter < 8*time.Second) {
		// A consumer batch that read entries before the loss may write
		// for up to 8s: facts read earlier could miss its orders.
		errs = append(errs, errors.New("SECKILL_AUTO_REBUILD_AFTER: 0 (off) or at least 8s (the consumers' batch timeout)"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("SECKILL_REQUEST_TIMEOUT: must be positive"))
	}
	if c.PayTimeout < time.Second {
		errs = append(errs, errors.New("SECKILL_PAY_TIMEOUT: must be at least 1s"))
	}
	if c.CodeCooldown < time.Second {
		errs = append(errs, errors.New("SECKILL_CODE_COOLDOWN: must be at least 1s"))
	}
	if c.CodeDailyLimit < 1 {
		errs = append(errs, errors.New("SECKILL_CODE_DAILY_LIMIT: must be at least 1"))
	}
	if c.CodeIPLimit < 0 {
		errs = append(errs, errors.New("SECKILL_CODE_IP_LIMIT: must be 0 (no limit) or more"))
	}
	for _, p := range c.TrustedProxies {
		if !validProxy(p) {
			errs = append(errs, fmt.Errorf("SECKILL_TRUSTED_PROXIES: %q is not an IP or a CIDR", p))
		}
	}
	return oneLine(errs)
}

// tracingOn reads the OTEL_* variables that turn tracing on (Config.Tracing).
func tracingOn(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" {
		return e != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// validProxy reports whether p is an IP or a CIDR (as gin's
// SetTrustedProxies reads them).
func validProxy(p string) bool {
	if strings.Contains(p, "/") {
		_, _, err := net.ParseCIDR(p)
		return err == nil
	}
	return net.ParseIP(p) != nil
}

// oneLine joins errors into one error of one line ("; " between them), so a
// refused start prints a single line.
func oneLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// RedisTLSConfig returns the TLS settings of every Redis connection, nil
// when SECKILL_REDIS_TLS is off. It reads SECKILL_REDIS_TLS_CA: call it once
// at start. The server name is left empty: crypto/tls then checks the
// certificate against the host of each address dialled.
func (c *Config) RedisTLSConfig() (*tls.Config, error) {
	if !c.RedisTLS {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.RedisTLSCA == "" {
		return t, nil // the system's CAs
	}
	pem, err := os.ReadFile(c.RedisTLSCA)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_REDIS_TLS_CA: %v", err)
	}
	t.RootCAs = x509.NewCertPool()
	if !t.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("SECKILL_REDIS_TLS_CA: no PEM certificate in %s", c.RedisTLSCA)
	}
	return t, nil
}

// Secret returns the JWT secret and whether it is the public development one.
func (c *Config) Secret() (secret string, isDev bool) {
	if c.JWTSecret == "" {
		return DevJWTSecret, true
	}
	return c.JWTSecret, false
}

// LogValue masks secrets for the startup log line.
func (c Config) LogValue() slog.Value {
	dsn := c.MySQLDSN
	if dsn != "" {
		cfg, err := mysql.ParseDSN(dsn)
		switch {
		case err != nil:
			dsn = "(unparseable)"
		case cfg.Passwd != "":
			cfg.Passwd = "***"
			dsn = cfg.FormatDSN()
		}
	}
	secret := "(development default)"
	if c.JWTSecret != "" {
		secret = "***"
	}
	redisAddr := orEmbedded(c.RedisAddr)
	if c.Sentinel() {
		redisAddr = "(sentinel)"
	}
	if c.Cluster() {
		redisAddr = "(cluster)"
	}
	masked := func(s string) string {
		if s == "" {
			return ""
		}
		return "***"
	}
	return slog.GroupValue(
		slog.String("http_addr", c.HTTPAddr),
		slog.String("mysql_dsn", orEmbedded(dsn)),
		slog.String("redis_addr", redisAddr),
		slog.Any("redis_sentinel_addrs", c.RedisSentinelAddrs),
		slog.String("redis_master", c.RedisMaster),
		slog.Any("redis_cluster_addrs", c.RedisClusterAddrs),
		slog.String("redis_username", c.RedisUsername),
		slog.String("redis_password", masked(c.RedisPassword)),
		slog.String("redis_sentinel_password", masked(c.RedisSentinelPassword)),
		slog.Bool("redis_tls", c.RedisTLS),
		slog.String("redis_tls_ca", c.RedisTLSCA),
		slog.Int("stock_buckets", max(c.StockBuckets, 1)),
		slog.String("lock_mode", c.LockMode),
		slog.String("lock_ttl", c.LockTTL.String()),
		slog.Int("lock_wait_replicas", c.LockWaitReplicas),
		slog.String("lock_wait_timeout", c.LockWaitTimeout.String()),
		slog.Any("redlock_addrs", c.RedlockAddrs),
		slog.Any("zk_addrs", c.ZKAddrs),
		slog.String("order_mode", c.OrderMode),
		slog.Bool("fencing", c.Fencing),
		slog.Bool("sync_group_commit", c.SyncGroupCommit),
		slog.String("jwt_secret", secret),
		slog.String("env", c.Env),
		slog.String("request_timeout", c.RequestTimeout.String()),
		slog.String("pay_timeout", c.PayTimeout.String()),
		slog.String("dev_critical_delay", c.CriticalDelay.String()),
		slog.Int("rate_limit", c.RateLimit),
		slog.Int("rate_limit_voucher", c.RateLimitVoucher),
		slog.Int("rate_limit_ip", c.RateLimitIP),
		slog.Int("consumers", c.ConsumerCount()),
		slog.String("claim_idle", c.ClaimIdleOrDefault().String()),
		slog.Float64("consumer_duty", c.ConsumerDuty),
		slog.String("dev_consumer_delay", c.ConsumerDelay.String()),
		slog.String("auto_rebuild_after", c.AutoRebuildAfter.String()),
		slog.String("api_style", c.APIStyle),
		slog.String("code_cooldown", c.CodeCooldown.String()),
		slog.Int("access_log", c.AccessLog),
		slog.Int("code_daily_limit", c.CodeDailyLimit),
		slog.Int("code_ip_limit", c.CodeIPLimit),
		slog.Any("trusted_proxies", c.TrustedProxies),
		slog.Bool("tracing", c.Tracing),
	)
}

func orEmbedded(s string) string {
	if s == "" {
		return "(embedded)"
	}
	return s
}

func list(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func validHostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	return err == nil && host != "" && validPort(port)
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Getenv adapts os.Getenv for Load.
func Getenv(name string) string { return os.Getenv(name) }
