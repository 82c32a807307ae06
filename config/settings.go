package config

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"seckill/auth/sms"
	"seckill/model"
)

// setting declares one environment variable once: its field and parser
// (b), default, bounds and texts. Load, Default, Validate, Help,
// Markdown and LogValue all read the table below.
type setting struct {
	Name string  // the environment variable
	b    binding // nil: read by a library, listed for the docs only
	Help string  // what it sets, one line of markdown
	More string  // what the docs add to Help, markdown
	// Default is the default in words, when it depends on other settings.
	Default string
	Zero    string // what an empty or zero value means
	What    string // the accepted values, when not the parser's words
	Raw     bool   // taken as given, blanks kept (passwords)
	Key     string // the log key, when not derived from Name
	// Log is the logged value, when it must hide a secret or explain.
	Log func(*Config) slog.Value
	// read sets the field from several variables at once.
	read func(c *Config, getenv func(string) string)
}

// key is the setting's name in the start-up log line.
func (s setting) key() string {
	if s.Key != "" {
		return s.Key
	}
	return strings.ToLower(strings.TrimPrefix(s.Name, "SECKILL_"))
}

// what describes the accepted values, in markdown.
func (s setting) what() string {
	if s.What != "" || s.b == nil {
		return s.What
	}
	return s.b.what()
}

const anyInt = math.MaxInt

// settings is every setting, in the order of the docs and the log line.
var settings = []setting{
	{Name: "SECKILL_HTTP_ADDR", b: text(func(c *Config) *string { return &c.HTTPAddr }, DevHTTPAddr, "`host:port`", checkListen),
		Help:    "listen address (port `0`: any free port)",
		Default: fmt.Sprintf("`%s` in development (this machine only), `%s` in production (every interface)", DevHTTPAddr, ProductionHTTPAddr)},
	{Name: "SECKILL_ENV", b: oneOf(func(c *Config) *string { return &c.Env }, EnvDevelopment, []string{EnvDevelopment, EnvProduction}),
		Help:    "production needs a real database and a real Redis (the embedded ones are refused)",
		Default: "`development` only when both backends are embedded (no `SECKILL_MYSQL_DSN`, no `SECKILL_REDIS_ADDR`, no `SECKILL_REDIS_SENTINEL_ADDRS`, no `SECKILL_REDIS_CLUSTER_ADDRS`); otherwise `production`"},
	{Name: "SECKILL_LOG_LEVEL", b: oneOf(func(c *Config) *string { return &c.LogLevel }, "info", []string{"debug", "info", "warn", "error"}),
		Help: "the least level of the JSON log on stderr"},
	{Name: "SECKILL_MYSQL_DSN", b: text(func(c *Config) *string { return &c.MySQLDSN }, "", "a go-sql-driver DSN", checkDSN),
		Help: "the MySQL database, e.g. `root:@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=Local`",
		More: "; its password is masked in the start-up log", Zero: "embedded SQLite under `SECKILL_DATA_DIR`",
		Log: logDSN},
	{Name: "SECKILL_DATA_DIR", b: text(func(c *Config) *string { return &c.DataDir }, "./data", "a directory", nil),
		Help: "directory of the embedded database"},
	{Name: "SECKILL_REDIS_ADDR", b: text(func(c *Config) *string { return &c.RedisAddr }, "", "`host:port`", checkHostPort),
		Help: "a single Redis", Zero: "embedded Redis (in process)", Log: logRedisAddr},
	{Name: "SECKILL_REDIS_SENTINEL_ADDRS", b: list(func(c *Config) *[]string { return &c.RedisSentinelAddrs }, validHostPort, "`host:port`"),
		Help: "Redis Sentinels: a Sentinel-managed Redis instead of `SECKILL_REDIS_ADDR` (both set: the start is refused); needs `SECKILL_REDIS_MASTER`"},
	{Name: "SECKILL_REDIS_MASTER", b: text(func(c *Config) *string { return &c.RedisMaster }, "", "a name", nil),
		Help: "the master's name at the Sentinels; only with `SECKILL_REDIS_SENTINEL_ADDRS`"},
	{Name: "SECKILL_REDIS_CLUSTER_ADDRS", b: list(func(c *Config) *[]string { return &c.RedisClusterAddrs }, validHostPort, "`host:port`"),
		Help: "seed nodes of a Redis Cluster (go-redis's cluster client), instead of `SECKILL_REDIS_ADDR`; of the three Redis settings only one may be set",
		More: ". Every script and MULTI names the keys of one slot (docs/contract.md, the shards)"},
	{Name: "SECKILL_REDIS_USERNAME", b: text(func(c *Config) *string { return &c.RedisUsername }, "", "a name", nil),
		Help: "ACL user of every Redis connection (single, Sentinel-managed, Cluster, the Redlock nodes); needs `SECKILL_REDIS_PASSWORD`",
		Zero: "the default user"},
	{Name: "SECKILL_REDIS_PASSWORD", b: text(func(c *Config) *string { return &c.RedisPassword }, "", "a password", nil), Raw: true,
		Help: "password of that user (`requirepass` for the default user), taken as given; refused with the embedded Redis",
		More: "; masked (`***`) in the start-up log", Log: logSecret(func(c *Config) string { return c.RedisPassword })},
	{Name: "SECKILL_REDIS_SENTINEL_PASSWORD", b: text(func(c *Config) *string { return &c.RedisSentinelPassword }, "", "a password", nil), Raw: true,
		Help: "the Sentinels' own password (their `requirepass`); only with `SECKILL_REDIS_SENTINEL_ADDRS`",
		More: "; masked in the log", Log: logSecret(func(c *Config) string { return c.RedisSentinelPassword })},
	{Name: "SECKILL_REDIS_TLS", b: onOff(func(c *Config) *bool { return &c.RedisTLS }, false),
		Help: "`on`: every Redis connection (the Sentinels' too) uses TLS 1.2 or later; refused with the embedded Redis",
		More: ". The server's certificate is checked against the host of the address dialled"},
	{Name: "SECKILL_REDIS_TLS_CA", b: text(func(c *Config) *string { return &c.RedisTLSCA }, "", "a PEM file", nil),
		Help: "the CA of the Redis servers' certificates, instead of the system's; setting it turns `SECKILL_REDIS_TLS` on",
		More: ". A file that cannot be read or holds no certificate stops the start"},
	{Name: "SECKILL_LOCK_MODE", b: oneOf(func(c *Config) *string { return &c.LockMode }, "lua", LockModes),
		Help: "the per-user lock of the seckill flow"},
	{Name: "SECKILL_LOCK_TTL", b: duration(func(c *Config) *time.Duration { return &c.LockTTL }, 10*time.Second, time.Nanosecond, false),
		Help: "lease of the per-user lock"},
	{Name: "SECKILL_LOCK_WAIT_REPLICAS", b: number(func(c *Config) *int { return &c.LockWaitReplicas }, 0, 0, anyInt),
		Help: "replicas that must acknowledge each `lua`/`reentrant` grant and renewal (`WAIT`); fewer undo the grant",
		Zero: "off"},
	{Name: "SECKILL_LOCK_WAIT_TIMEOUT", b: duration(func(c *Config) *time.Duration { return &c.LockWaitTimeout }, 100*time.Millisecond, time.Nanosecond, false),
		Help: "bound of that `WAIT` (keep below the Redis read timeout, 3s)"},
	{Name: "SECKILL_REDLOCK_ADDRS", b: list(func(c *Config) *[]string { return &c.RedlockAddrs }, validHostPort, "`host:port`"),
		Help: "independent Redis nodes for `redsync` / `multi`", Zero: "the one Redis (`redsync` and `multi` then start with a warning: on one node they are a plain lock and prove nothing)"},
	{Name: "SECKILL_ZK_ADDRS", b: list(func(c *Config) *[]string { return &c.ZKAddrs }, validHostPort, "`host:port`"),
		Help: "ZooKeeper servers for `zookeeper`"},
	{Name: "SECKILL_FENCING", b: onOff(func(c *Config) *bool { return &c.Fencing }, false),
		Help: "`on`: the order transaction refuses stale fencing tokens"},
	{Name: "SECKILL_ORDER_MODE", b: oneOf(func(c *Config) *string { return &c.OrderMode }, "sync", []string{"sync", "async"}),
		Help: "`sync` writes each order in the request; `async` admits it in Redis and stream consumers write it"},
	{Name: "SECKILL_SYNC_GROUP_COMMIT", b: onOff(func(c *Config) *bool { return &c.SyncGroupCommit }, true),
		Help: "sync: `on` commits the orders of one voucher's concurrent buyers in one transaction; `off` = one transaction per order, the course's path",
		More: ". Up to 64 at once; a lone buyer commits at once, alone (docs/contract.md, \"The seckill flow\")"},
	{Name: "SECKILL_STOCK_BUCKETS", b: number(func(c *Config) *int { return &c.StockBuckets }, 1, 1, model.MaxStockBuckets),
		Help: "async: the buckets a voucher's Redis stock is split in when it is published without `stockBuckets`",
		More: " (docs/async.md, \"Stock buckets\")"},
	{Name: "SECKILL_WAITING_ROOM", b: onOff(func(c *Config) *bool { return &c.WaitingRoom }, false),
		Help: "`on`: a voucher published without `waitingRoom` gets a waiting room; `off`: it sells as the course does",
		More: " (docs/waiting-room.md)"},
	{Name: "SECKILL_WAITING_ROOM_TOKEN_TTL", b: duration(func(c *Config) *time.Duration { return &c.WaitingRoomTokenTTL }, time.Minute, time.Second, false),
		Help: "how long a waiting room's admission lasts; an admission not used by then lapses and passes its slot on"},
	{Name: "SECKILL_WAITING_ROOM_OVERBOOK", b: fraction(func(c *Config) *float64 { return &c.WaitingRoomOverbook }, 1.2, 1, 10),
		Help: "the most admitted-but-not-bought buyers per remaining unit of a waiting room; the no-show rate measured in the sale lowers it",
		What: "a number from 1 to 10"},
	{Name: "SECKILL_WAITING_ROOM_RATE_LIMIT", b: number(func(c *Config) *int { return &c.WaitingRoomRateLimit }, 10, 0, anyInt),
		Help: "joins and polls of a waiting room one user may send per second over every instance, counting those that reach Redis (a poll answered from its `Queue-Ticket` is free, and so is the join that puts the user in the room); the rest get 429 RATE_LIMITED with `Retry-After`",
		More: " (a client polling as told sends at most 4 a second)", Zero: "no limit"},
	{Name: "SECKILL_WAITING_ROOM_RATE_LIMIT_IP", b: number(func(c *Config) *int { return &c.WaitingRoomRateLimitIP }, 0, 0, anyInt),
		Help: "joins and polls of a waiting room from one client address per second over every instance, counted as SECKILL_WAITING_ROOM_RATE_LIMIT's",
		More: "; off by default, as one address may carry a whole office or a carrier's NAT", Zero: "no limit"},
	{Name: "SECKILL_CONSUMERS", b: number(func(c *Config) *int { return &c.Consumers }, DefaultConsumers, 1, 64),
		Help: "async: stream consumers per process",
		More: "; on 2 cores a second consumer drains faster but takes CPU from admission (9,377 vs 4,986 admissions/s in one pair of bench runs of 2026-11-22, a separate experiment)"},
	{Name: "SECKILL_CONSUMER_DUTY", b: fraction(func(c *Config) *float64 { return &c.ConsumerDuty }, DefaultConsumerDuty, 0.05, 1),
		Help: "async: the most of its time a stream consumer spends on a backlog (full batches) while its own process admits orders (1: never pauses)",
		More: "; it then pauses after each batch, at most 250 ms, so that admissions keep the CPU and the backlog is written in the gaps and after the burst"},
	{Name: "SECKILL_CONSUMER_LOCK", b: onOff(func(c *Config) *bool { return &c.ConsumerLock }, false),
		Help: "async: `on` makes the stream consumers take `lock:order:<userId>` (SECKILL_LOCK_MODE) around each write; `off` leaves one order per user to the admission script and the unique key",
		More: " (docs/async.md, \"The consumers' per-user lock\")"},
	{Name: "SECKILL_CLAIM_IDLE", b: duration(func(c *Config) *time.Duration { return &c.ClaimIdle }, DefaultClaimIdle, ConsumerBatchTimeout, false),
		Help: "async: how long an entry may stay pending at a consumer before another claims it; at least the consumers' batch timeout"},
	{Name: "SECKILL_AUTO_REBUILD", b: onOff(func(c *Config) *bool { return &c.AutoRebuild }, true),
		Help: "async: `on` rebuilds a voucher refused (`unsafe`) after Redis lost its data as soon as the loss is seen; `off` leaves it to the operator (`seckill rebuild`)",
		More: ". The loss fence settles the consumers' writes first (docs/async.md, \"The loss fence\")"},
	{Name: "SECKILL_DEV_CONSUMER_DELAY", b: duration(func(c *Config) *time.Duration { return &c.ConsumerDelay }, 0, 0, false),
		Help: "development only: a pause in each consumer batch between read and write (crash tests)"},
	{Name: "SECKILL_DEV_CRITICAL_DELAY", b: duration(func(c *Config) *time.Duration { return &c.CriticalDelay }, 0, 0, false),
		Help: "development only: a pause inside the critical section (after the lock, before the transaction), for the \"slow business\" load tests"},
	{Name: "SECKILL_JWT_SECRET", b: text(func(c *Config) *string { return &c.JWTSecret }, "", "a secret", nil),
		Help:    "HMAC secret for tokens",
		Default: fmt.Sprintf("required in production: at least %d bytes and not the public development secret (`openssl rand -hex 32` makes one), else every command refuses to start naming the variable; in development a public secret, with a warning", MinJWTSecret),
		Log:     logJWTSecret},
	{Name: "SECKILL_JWT_TTL", b: duration(func(c *Config) *time.Duration { return &c.JWTTTL }, 24*time.Hour, time.Nanosecond, false),
		Help: "token lifetime"},
	{Name: "SECKILL_REQUEST_TIMEOUT", b: duration(func(c *Config) *time.Duration { return &c.RequestTimeout }, 3*time.Second, time.Nanosecond, false),
		Help: "deadline of every request; a dependency slower than this gives 503"},
	{Name: "SECKILL_PAY_TIMEOUT", b: duration(func(c *Config) *time.Duration { return &c.PayTimeout }, 15*time.Minute, time.Second, false),
		Help: "how long an order may stay unpaid, counted from the purchase; then every instance's sweeper cancels it (`expired`) and its unit goes back on sale",
		More: ". In async mode the purchase is the admission in Redis, not the consumer's write"},
	{Name: "SECKILL_RATE_LIMIT", b: number(func(c *Config) *int { return &c.RateLimit }, 0, 0, anyInt),
		Help: "purchases (`POST /voucher-order/seckill/:id`) one user may send per second, over every instance; the rest get 429 RATE_LIMITED with `Retry-After`",
		More: " (Redis, GCRA: this many at once, then this many per second)", Zero: "no limit"},
	{Name: "SECKILL_RATE_LIMIT_VOUCHER", b: number(func(c *Config) *int { return &c.RateLimitVoucher }, 0, 0, anyInt),
		Help: "purchases of one voucher admitted per second over every instance (a ceiling that protects Redis and the database in a stampede)",
		More: "; counted only when the user's and the address's limits passed", Zero: "no limit"},
	{Name: "SECKILL_RATE_LIMIT_IP", b: number(func(c *Config) *int { return &c.RateLimitIP }, 0, 0, anyInt),
		Help: "purchases from one client address per second over every instance; the address is the connection's peer unless it is one of `SECKILL_TRUSTED_PROXIES`",
		Zero: "no limit"},
	{Name: "SECKILL_SHED_TARGET", b: duration(func(c *Config) *time.Duration { return &c.ShedTarget }, 100*time.Millisecond, 10*time.Millisecond, true),
		Help: "the longest queue of purchases (`POST /voucher-order/seckill/:id`) an instance keeps, as the time it takes to clear: purchases in flight beyond what the instance finished in this time (its busiest 100 ms of the last second, scaled; at least 128 in flight) are answered at once with 503 UNAVAILABLE and `Retry-After: 1`, before any work",
		More: " (docs/operations.md, \"Shedding a stampede\")"},
	{Name: "SECKILL_REDEEM_LIMIT_STAFF", b: number(func(c *Config) *int { return &c.RedeemLimitStaff }, 20, 1, anyInt),
		Help: "redemption attempts (`POST /shop/:shopId/redeem`) one staff member may make per minute, over every instance; the rest get 429 RATE_LIMITED with `Retry-After`. It bounds guessing of codes",
		More: " (Redis, GCRA: this many at once, then this many per minute; a Redis that cannot count refuses with 503)"},
	{Name: "SECKILL_REDEEM_LIMIT_SHOP", b: number(func(c *Config) *int { return &c.RedeemLimitShop }, 120, 1, anyInt),
		Help: "redemption attempts one shop's staff may make together per minute, over every instance; the rest get 429 RATE_LIMITED with `Retry-After`"},
	{Name: "SECKILL_IDEMPOTENCY_TTL", b: duration(func(c *Config) *time.Duration { return &c.IdempotencyTTL }, 24*time.Hour, time.Second, false),
		Help: "how long the answer to an `Idempotency-Key` is kept and replayed; only successes are kept",
		More: " (Redis, one record per key of at most about 1.2 KiB)"},
	{Name: "SECKILL_IDEMPOTENCY_MAX_KEYS", b: number(func(c *Config) *int { return &c.IdempotencyMaxKeys }, 100, 1, anyInt),
		Help: "live `Idempotency-Key`s one user may hold over every instance (answers kept and attempts in flight); past it a new key is 429 RATE_LIMITED with `Retry-After`",
		More: ". It bounds one user's Redis memory: about 1.2 KiB a key"},
	{Name: "SECKILL_CODE_COOLDOWN", b: duration(func(c *Config) *time.Duration { return &c.CodeCooldown }, time.Minute, time.Second, false),
		Help: "least time between two login codes to one phone, over every instance (Redis); sooner is 429 RATE_LIMITED with `Retry-After`"},
	{Name: "SECKILL_CODE_DAILY_LIMIT", b: number(func(c *Config) *int { return &c.CodeDailyLimit }, 10, 1, anyInt),
		Help: "login codes one phone gets per 24 h",
		More: " (GCRA: this many at once, then one every 24 h / N)"},
	{Name: "SECKILL_CODE_IP_LIMIT", b: number(func(c *Config) *int { return &c.CodeIPLimit }, 30, 0, anyInt),
		Help: "login codes one client address may ask for per minute, over every instance",
		More: " (generous for users behind one carrier NAT)", Zero: "no limit"},
	{Name: "SECKILL_SMS_SENDER", b: text(func(c *Config) *string { return &c.SMSSender }, "", "one of `log`, `webhook`, `aliyun`, `tencent`", checkSender),
		Help:    "where login codes go: `log` the development log; `webhook` a signed POST to `SECKILL_SMS_WEBHOOK_URL`; `tencent` Tencent Cloud SMS; `aliyun` is reserved and refused (not built)",
		More:    ". A send that fails (after up to 3 tries in 2 s, the code's own connections) is 503 `UNAVAILABLE` in words and stores no code",
		Default: "`log` in development; required in production (`serve` refuses to start without it or with `log`)"},
	{Name: "SECKILL_SMS_WEBHOOK_URL", b: text(func(c *Config) *string { return &c.SMSWebhookURL }, "", "an http(s) URL", checkURL),
		Help: "`webhook`: the URL each code is posted to, as `{\"phone\":\"13812345678\",\"code\":\"123456\",\"ttlSeconds\":120}`; any 2xx means sent, a redirect (3xx) is not followed and fails the send",
		More: "; its userinfo and query values are masked (`***`) in the log", Log: logURL(func(c *Config) string { return c.SMSWebhookURL })},
	{Name: "SECKILL_SMS_WEBHOOK_SECRET", b: text(func(c *Config) *string { return &c.SMSWebhookSecret }, "", "a secret", nil), Raw: true,
		Help: fmt.Sprintf("`webhook`: at least %d bytes; each request carries `X-Seckill-Signature: sha256=<hex HMAC-SHA256 of the body with this secret>`", sms.MinWebhookSecret),
		More: "; masked in the log", Log: logSecret(func(c *Config) string { return c.SMSWebhookSecret })},
	{Name: "SECKILL_SMS_ACCESS_KEY_ID", b: text(func(c *Config) *string { return &c.SMSAccessKeyID }, "", "a key id", nil),
		Help: "`tencent`: the API key's id (SecretId)"},
	{Name: "SECKILL_SMS_ACCESS_KEY_SECRET", b: text(func(c *Config) *string { return &c.SMSAccessKeySecret }, "", "a secret", nil), Raw: true,
		Help: "`tencent`: the API key's secret (SecretKey)",
		More: "; masked in the log", Log: logSecret(func(c *Config) string { return c.SMSAccessKeySecret })},
	{Name: "SECKILL_SMS_APP_ID", b: text(func(c *Config) *string { return &c.SMSAppID }, "", "an id", nil),
		Help: "`tencent`: the SMS application (`SmsSdkAppId`)"},
	{Name: "SECKILL_SMS_SIGN_NAME", b: text(func(c *Config) *string { return &c.SMSSignName }, "", "a name", nil),
		Help: "`tencent`: the approved signature the message opens with"},
	{Name: "SECKILL_SMS_TEMPLATE", b: text(func(c *Config) *string { return &c.SMSTemplate }, "", "an id", nil),
		Help: "`tencent`: the approved template's id; `{1}` is the code, `{2}` the minutes it stays valid"},
	{Name: "SECKILL_SMS_ENDPOINT", b: text(func(c *Config) *string { return &c.SMSEndpoint }, "", "an http(s) URL", checkURL),
		Help: "`tencent`: the provider's API address; production refuses `http://` (the codes would travel in clear text)",
		More: "; its userinfo and query values are masked (`***`) in the log", Log: logURL(func(c *Config) string { return c.SMSEndpoint }),
		Zero: "`" + sms.TencentEndpoint + "`"},
	{Name: "SECKILL_PAY_PROVIDERS", b: list(func(c *Config) *[]string { return &c.PayProviders }, validProvider, "`alipay`, `wechat`, `simulated`"),
		Help:    "the pay providers the buyers may choose (`POST /voucher-order/:orderId/pay` with `{\"provider\":...}`): `alipay`, `wechat` (real money; only their verified notification, or a query that finds the trade paid, pays an order), `simulated` (the call pays at once, no money moves: development only)",
		Default: "`simulated` in development; required in production, where `simulated` is refused (`serve` refuses to start)"},
	{Name: "SECKILL_PAY_NOTIFY_BASE_URL", b: text(func(c *Config) *string { return &c.PayNotifyBaseURL }, "", "an http(s) URL", checkURL),
		Help: "the public base URL the providers call back: `<base>/pay/notify/alipay`, `<base>/pay/notify/wechat`; required with `alipay` or `wechat`"},
	{Name: "SECKILL_PAY_UNREACHABLE_GRACE", b: duration(func(c *Config) *time.Duration { return &c.PayUnreachableGrace }, 15*time.Minute, time.Second, false),
		Help: "how long past its pay deadline an order is kept unpaid while its provider cannot be asked whether its trade was paid (never cancel an order whose trade may have been paid); after it the order expires and a payment that shows up later is refunded (`unreachable_provider`)"},
	{Name: "SECKILL_RECONCILE_INTERVAL", b: duration(func(c *Config) *time.Duration { return &c.ReconcileInterval }, time.Hour, time.Second, false),
		Help: "with `alipay` or `wechat`: how often each instance reconciles the providers with the orders (lost notifications, refunds in flight, yesterday's and today's bills; docs/payments.md, Reconciliation), first a minute after start; `seckill reconcile-payments` runs it once"},
	{Name: "SECKILL_ALIPAY_APP_ID", b: text(func(c *Config) *string { return &c.AlipayAppID }, "", "an id", nil),
		Help: "`alipay`: the application's id (`app_id`); a notification for another app is rejected"},
	{Name: "SECKILL_ALIPAY_PRIVATE_KEY_FILE", b: text(func(c *Config) *string { return &c.AlipayPrivateKeyFile }, "", "a file", nil),
		Help: "`alipay`: the application's RSA private key (PEM, RSA2 signing); read at start, never logged"},
	{Name: "SECKILL_ALIPAY_PUBLIC_KEY_FILE", b: text(func(c *Config) *string { return &c.AlipayPublicKeyFile }, "", "a file", nil),
		Help: "`alipay`: Alipay's public key (PEM) that verifies its answers and notifications"},
	{Name: "SECKILL_ALIPAY_GATEWAY", b: text(func(c *Config) *string { return &c.AlipayGateway }, "", "an http(s) URL", checkURL),
		Help: "`alipay`: the gateway (`.../gateway.do`); production refuses `http://`", Zero: "Alipay's production gateway"},
	{Name: "SECKILL_WECHATPAY_MCH_ID", b: text(func(c *Config) *string { return &c.WechatMchID }, "", "an id", nil),
		Help: "`wechat`: the merchant id (`mchid`); a notification for another merchant is rejected"},
	{Name: "SECKILL_WECHATPAY_APP_ID", b: text(func(c *Config) *string { return &c.WechatAppID }, "", "an id", nil),
		Help: "`wechat`: the app id bound to the merchant (`appid`)"},
	{Name: "SECKILL_WECHATPAY_SERIAL", b: text(func(c *Config) *string { return &c.WechatSerial }, "", "a serial number", nil),
		Help: "`wechat`: the serial number of the merchant's API certificate"},
	{Name: "SECKILL_WECHATPAY_PRIVATE_KEY_FILE", b: text(func(c *Config) *string { return &c.WechatPrivateKeyFile }, "", "a file", nil),
		Help: "`wechat`: the merchant's API private key (PEM); read at start, never logged"},
	{Name: "SECKILL_WECHATPAY_APIV3_KEY_FILE", b: text(func(c *Config) *string { return &c.WechatAPIv3KeyFile }, "", "a file", nil),
		Help: "`wechat`: the file holding the 32-byte APIv3 key that decrypts notifications; never logged"},
	{Name: "SECKILL_WECHATPAY_PUBLIC_KEY_FILE", b: text(func(c *Config) *string { return &c.WechatPublicKeyFile }, "", "a file", nil),
		Help: "`wechat`: the WeChat Pay public key (PEM) that verifies answers and notifications"},
	{Name: "SECKILL_WECHATPAY_PUBLIC_KEY_ID", b: text(func(c *Config) *string { return &c.WechatPublicKeyID }, "", "an id", nil),
		Help: "`wechat`: the id of that public key (`PUB_KEY_ID_...`)"},
	{Name: "SECKILL_WECHATPAY_BASE_URL", b: text(func(c *Config) *string { return &c.WechatBaseURL }, "", "an http(s) URL", checkURL),
		Help: "`wechat`: the API's base URL; production refuses `http://`", Zero: "`https://api.mch.weixin.qq.com`"},
	{Name: "SECKILL_TRUSTED_PROXIES", b: list(func(c *Config) *[]string { return &c.TrustedProxies }, validProxy, "IPs or CIDRs"),
		Help: "the proxies whose `X-Forwarded-For` names the client address (the per-address limits)",
		Zero: "the client is the connection's peer"},
	{Name: "SECKILL_ACCESS_LOG", b: number(func(c *Config) *int { return &c.AccessLog }, 20, 0, anyInt),
		Help: "the access log: at most this many request lines a second per instance; lines beyond it are counted, not written",
		More: ". Lines are at info level in the same JSON as the rest (`\"msg\":\"request\"` with `method`, `route`, `path`, `query`, `status`, `code`, `duration_ms`, `client`); the next line written carries `dropped_before`, so under load it is a sample. Never a token, a body or a whole phone (`phone=138****5678`)",
		Zero: "off"},
	{Name: "SECKILL_API_STYLE", b: oneOf(func(c *Config) *string { return &c.APIStyle }, "rest", APIStyles),
		Help: "`rest`: refusals carry their HTTP status (400, 404, 409, ...); `heima`: business refusals and input errors are 200 with `success:false` and the course's message",
		More: ", for the course's frontend (401 and 5xx unchanged; see [course-frontend.md](course-frontend.md))"},
	{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", b: onOff(func(c *Config) *bool { return &c.Tracing }, false), Key: "tracing",
		read: func(c *Config, getenv func(string) string) { c.Tracing = tracingOn(getenv) },
		What: "a URL", Default: "unset: tracing off, nothing instrumented",
		Help: "turns OpenTelemetry tracing on, exporting over OTLP to this endpoint (e.g. `http://jaeger:4318`)",
		More: "; the other standard `OTEL_*` variables apply: `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (e.g. `parentbased_traceidratio` and `0.01`), `OTEL_SERVICE_NAME` (default `seckill`), `OTEL_SDK_DISABLED=true`"},
	{Name: "OTEL_TRACES_EXPORTER", What: "`otlp`, `console` or `none`", Default: "unset (`otlp` once tracing is on)",
		Help: "the trace exporter (`console`: spans as JSON to stdout); any value but `none` turns tracing on too"},
	{Name: "SECKILL_TRACE_TRUST_PARENT", b: onOff(func(c *Config) *bool { return &c.TraceTrustParent }, false),
		Help: "`on`: a request's `traceparent` is its span's parent, and its sampled flag decides whether the request is traced; `off`: the request starts a trace of its own, sampled by `OTEL_TRACES_SAMPLER`'s ratio, linked to the caller's span",
		More: " (`off` keeps a client from forcing sampling; `on` behind a gateway of yours that decides it)"},
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

// logDSN shows the DSN with its password masked.
func logDSN(c *Config) slog.Value {
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
	return slog.StringValue(orEmbedded(dsn))
}

// logRedisAddr names the kind of Redis when it is not a single address.
func logRedisAddr(c *Config) slog.Value {
	switch {
	case c.Cluster():
		return slog.StringValue("(cluster)")
	case c.Sentinel():
		return slog.StringValue("(sentinel)")
	}
	return slog.StringValue(orEmbedded(c.RedisAddr))
}

func logJWTSecret(c *Config) slog.Value {
	if c.JWTSecret == "" {
		return slog.StringValue("(development default)")
	}
	return slog.StringValue("***")
}

// logURL shows a URL with its userinfo and query values masked
// (sms.RedactURL, the one rule for a sender's URL).
func logURL(get func(*Config) string) func(*Config) slog.Value {
	return func(c *Config) slog.Value { return slog.StringValue(sms.RedactURL(get(c))) }
}

// logSecret masks a non-empty secret.
func logSecret(get func(*Config) string) func(*Config) slog.Value {
	return func(c *Config) slog.Value {
		if get(c) == "" {
			return slog.StringValue("")
		}
		return slog.StringValue("***")
	}
}

func orEmbedded(s string) string {
	if s == "" {
		return "(embedded)"
	}
	return s
}
