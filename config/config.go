// Package config reads the typed configuration of the seckill service:
// the defaults of the table in settings.go, then the environment, then
// validation.
package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
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

// LockModes are the values of SECKILL_LOCK_MODE, in the order of the lock
// family: lock.Modes, which app's tests hold them to.
var LockModes = []string{
	"none", "local", "simple", "owner", "lua", "reentrant",
	"redsync", "multi", "mysql", "zookeeper",
}

// The stream consumers' defaults: those of async.ConsumerConfig, which
// app's tests hold them to.
const (
	DefaultConsumers    = 1
	DefaultConsumerDuty = 0.25
	DefaultClaimIdle    = 30 * time.Second
	// ConsumerBatchTimeout bounds a consumer's batch; app hands it to the
	// consumers. SECKILL_CLAIM_IDLE may not be shorter.
	ConsumerBatchTimeout = 8 * time.Second
)

// APIStyles are the values of SECKILL_API_STYLE: rest (refusals carry their
// HTTP status) and heima (the course frontend's 200 with success:false).
var APIStyles = []string{"rest", "heima"}

// Config is the whole configuration of one process. Each field is set
// by one environment variable. The table in settings.go declares it once:
// its name, default, bounds and meaning (docs/configuration.md).
type Config struct {
	HTTPAddr              string
	Env                   string
	LogLevel              string
	MySQLDSN              string
	DataDir               string
	RedisAddr             string
	RedisSentinelAddrs    []string
	RedisMaster           string
	RedisClusterAddrs     []string
	RedisUsername         string
	RedisPassword         string
	RedisSentinelPassword string
	RedisTLS              bool
	RedisTLSCA            string
	LockMode              string
	LockTTL               time.Duration
	LockWaitReplicas      int
	LockWaitTimeout       time.Duration
	RedlockAddrs          []string
	ZKAddrs               []string
	Fencing               bool
	OrderMode             string
	SyncGroupCommit       bool
	StockBuckets          int
	WaitingRoom           bool
	WaitingRoomTokenTTL   time.Duration
	WaitingRoomOverbook   float64
	// WaitingRoomRateLimit and WaitingRoomRateLimitIP bound the joins and
	// polls that reach Redis, per user and per address per second.
	WaitingRoomRateLimit   int
	WaitingRoomRateLimitIP int
	Consumers              int
	ConsumerDuty           float64
	ConsumerLock           bool
	ClaimIdle              time.Duration
	AutoRebuild            bool
	ConsumerDelay          time.Duration
	CriticalDelay          time.Duration
	JWTSecret              string
	JWTTTL                 time.Duration
	RequestTimeout         time.Duration
	ShedTarget             time.Duration
	PayTimeout             time.Duration
	RateLimit              int
	RateLimitVoucher       int
	RateLimitIP            int
	// RedeemLimitStaff and RedeemLimitShop bound the redemption attempts
	// per minute of one staff member and of one shop (docs/redemption.md).
	RedeemLimitStaff     int
	RedeemLimitShop      int
	IdempotencyTTL       time.Duration
	IdempotencyMaxKeys   int
	CodeCooldown         time.Duration
	CodeDailyLimit       int
	CodeIPLimit          int
	SMSSender            string
	SMSWebhookURL        string
	SMSWebhookSecret     string
	SMSAccessKeyID       string
	SMSAccessKeySecret   string
	SMSAppID             string
	SMSSignName          string
	SMSTemplate          string
	SMSEndpoint          string
	PayProviders         []string
	PayNotifyBaseURL     string
	PayUnreachableGrace  time.Duration
	ReconcileInterval    time.Duration
	AlipayAppID          string
	AlipayPrivateKeyFile string
	AlipayPublicKeyFile  string
	AlipayGateway        string
	WechatMchID          string
	WechatAppID          string
	WechatSerial         string
	WechatPrivateKeyFile string
	WechatAPIv3KeyFile   string
	WechatPublicKeyFile  string
	WechatPublicKeyID    string
	WechatBaseURL        string
	TrustedProxies       []string
	AccessLog            int
	APIStyle             string
	Tracing              bool
	// TraceTrustParent lets a request's traceparent decide its sampling
	// and be its span's parent (SECKILL_TRACE_TRUST_PARENT).
	TraceTrustParent bool
}

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
	var c Config
	for _, s := range settings {
		if s.b != nil {
			s.b.reset(&c)
		}
	}
	return c
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
// the variable at fault, all of them in one line.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	given := map[string]bool{}
	var errs []error
	for _, s := range settings {
		switch {
		case s.read != nil:
			s.read(&c, getenv)
		case s.b != nil:
			v := getenv(s.Name)
			if !s.Raw {
				v = strings.TrimSpace(v)
			}
			if v == "" {
				continue
			}
			given[s.Name] = true
			if err := s.b.set(&c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			}
		}
	}
	// Defaults that follow from other settings.
	if !given["SECKILL_ENV"] {
		c.Env = DefaultEnv(c.MySQLDSN, c.RedisAddr+strings.Join(c.RedisSentinelAddrs, ",")+strings.Join(c.RedisClusterAddrs, ","))
	}
	if !given["SECKILL_HTTP_ADDR"] && c.Env == EnvProduction {
		c.HTTPAddr = ProductionHTTPAddr
	}
	if c.RedisTLSCA != "" {
		c.RedisTLS = true
	}
	if len(errs) > 0 {
		return c, oneLine(errs)
	}
	return c, c.Validate()
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

// Getenv adapts os.Getenv for Load.
func Getenv(name string) string { return os.Getenv(name) }

// testPrefix starts the variables of the tests' own harness (.ci/env.sh),
// which the product never reads.
const testPrefix = "SECKILL_TEST_"

// Undeclared returns, sorted, the SECKILL_* names set in environ (in the
// form of os.Environ) that no setting declares: a misspelt or retired
// variable is otherwise ignored in silence. SECKILL_TEST_* are left out.
func Undeclared(environ []string) []string {
	declared := map[string]bool{}
	for _, s := range settings {
		declared[s.Name] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SECKILL_") && !strings.HasPrefix(name, testPrefix) && !declared[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
