package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"seckill/auth/sms"
)

// Validate checks each setting against its bounds, then the rules that
// join settings; each error names its variable.
func (c *Config) Validate() error {
	var errs []error
	for _, s := range settings {
		if s.b == nil {
			continue
		}
		if err := s.b.check(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
	}
	errs = append(errs, redisRules(c)...)
	errs = append(errs, lockRules(c)...)
	errs = append(errs, productionRules(c)...)
	errs = append(errs, smsRules(c)...)
	errs = append(errs, payRules(c)...)
	return oneLine(errs)
}

// SMS senders (SECKILL_SMS_SENDER).
const (
	SenderLog     = "log"
	SenderWebhook = "webhook"
	SenderAliyun  = "aliyun"
	SenderTencent = "tencent"
)

// Sender is SECKILL_SMS_SENDER, log when unset.
func (c *Config) Sender() string {
	if c.SMSSender == "" {
		return SenderLog
	}
	return c.SMSSender
}

// smsRules: what each sender needs.
func smsRules(c *Config) []error {
	var errs []error
	switch c.SMSSender {
	case SenderWebhook:
		if c.SMSWebhookURL == "" {
			errs = append(errs, errors.New("SECKILL_SMS_WEBHOOK_URL: required with SECKILL_SMS_SENDER=webhook (the URL the codes are posted to)"))
		}
		if len(c.SMSWebhookSecret) < sms.MinWebhookSecret {
			errs = append(errs, fmt.Errorf("SECKILL_SMS_WEBHOOK_SECRET: %d bytes, SECKILL_SMS_SENDER=webhook needs at least %d (the receiver checks each request's signature with it); make one with `openssl rand -hex 32`", len(c.SMSWebhookSecret), sms.MinWebhookSecret))
		}
	case SenderTencent:
		for _, v := range []struct{ name, value string }{
			{"SECKILL_SMS_ACCESS_KEY_ID", c.SMSAccessKeyID}, {"SECKILL_SMS_ACCESS_KEY_SECRET", c.SMSAccessKeySecret},
			{"SECKILL_SMS_APP_ID", c.SMSAppID}, {"SECKILL_SMS_SIGN_NAME", c.SMSSignName}, {"SECKILL_SMS_TEMPLATE", c.SMSTemplate},
		} {
			if v.value == "" {
				errs = append(errs, fmt.Errorf("%s: required with SECKILL_SMS_SENDER=tencent", v.name))
			}
		}
	case SenderAliyun:
		errs = append(errs, errors.New("SECKILL_SMS_SENDER: aliyun is reserved but not built (its Go SDK is not served by the module proxy this project builds from); use tencent or webhook"))
	}
	return errs
}

// CheckSender refuses to serve in production without a sender that
// reaches the buyer: the log holds no code there. Only serve calls it.
func (c *Config) CheckSender() error {
	if c.Env == EnvProduction && c.Sender() == SenderLog {
		return errors.New("SECKILL_SMS_SENDER: production needs a sender that reaches the buyer's phone (webhook or tencent); log, the default, writes codes to the development log only, so no buyer could log in")
	}
	return nil
}

// redisRules: one kind of Redis, its credentials, TLS and Sentinel master.
func redisRules(c *Config) []error {
	var errs []error
	const real = "only with a real Redis (SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS)"
	if c.RedisAddr != "" && c.Sentinel() {
		errs = append(errs, errors.New("SECKILL_REDIS_SENTINEL_ADDRS: set together with SECKILL_REDIS_ADDR; set only one of them (Sentinel-managed or a single Redis)"))
	}
	if c.Cluster() && (c.RedisAddr != "" || c.Sentinel()) {
		errs = append(errs, errors.New("SECKILL_REDIS_CLUSTER_ADDRS: set together with SECKILL_REDIS_ADDR or SECKILL_REDIS_SENTINEL_ADDRS; set only one of the three (a single Redis, Sentinel-managed, or a Redis Cluster)"))
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
		errs = append(errs, errors.New("SECKILL_REDIS_PASSWORD: "+real))
	}
	if c.RedisTLS && !c.RealRedis() {
		errs = append(errs, errors.New("SECKILL_REDIS_TLS: "+real))
	}
	if c.Sentinel() && c.RedisMaster == "" {
		errs = append(errs, errors.New("SECKILL_REDIS_MASTER: required with SECKILL_REDIS_SENTINEL_ADDRS (the name the Sentinels monitor the master under)"))
	}
	if !c.Sentinel() && c.RedisMaster != "" {
		errs = append(errs, errors.New("SECKILL_REDIS_SENTINEL_ADDRS: required with SECKILL_REDIS_MASTER (the Sentinels to ask for the master)"))
	}
	return errs
}

// lockRules: what each lock mode needs.
func lockRules(c *Config) []error {
	var errs []error
	if c.LockMode == "zookeeper" && len(c.ZKAddrs) == 0 {
		errs = append(errs, errors.New("SECKILL_ZK_ADDRS: required with SECKILL_LOCK_MODE=zookeeper"))
	}
	if c.LockMode == "mysql" && c.MySQLDSN == "" {
		errs = append(errs, errors.New("SECKILL_MYSQL_DSN: required with SECKILL_LOCK_MODE=mysql (the embedded database has no GET_LOCK)"))
	}
	if c.LockWaitReplicas > 0 && c.LockMode != "lua" && c.LockMode != "reentrant" {
		errs = append(errs, fmt.Errorf("SECKILL_LOCK_WAIT_REPLICAS: only with SECKILL_LOCK_MODE=lua or reentrant, not %q", c.LockMode))
	}
	if c.LockWaitReplicas > 0 && c.Cluster() {
		errs = append(errs, errors.New("SECKILL_LOCK_WAIT_REPLICAS: not with SECKILL_REDIS_CLUSTER_ADDRS (WAIT must follow the grant on the master's connection; the cluster client sends a command without a key to any node)"))
	}
	return errs
}

// productionRules: production refuses the public secret, the embedded
// backends, the development delays and Tencent SMS over plain http.
func productionRules(c *Config) []error {
	if c.Env != EnvProduction {
		return nil
	}
	var errs []error
	const openssl = "make one with `openssl rand -hex 32`"
	switch {
	case c.JWTSecret == "":
		errs = append(errs, fmt.Errorf("SECKILL_JWT_SECRET: required in production (the default with a real SECKILL_MYSQL_DSN, SECKILL_REDIS_ADDR, SECKILL_REDIS_SENTINEL_ADDRS or SECKILL_REDIS_CLUSTER_ADDRS); %s (at least %d bytes); SECKILL_ENV=development allows the public development secret", openssl, MinJWTSecret))
	case c.JWTSecret == DevJWTSecret:
		errs = append(errs, errors.New("SECKILL_JWT_SECRET: the public development secret is not allowed in production; "+openssl))
	case len(c.JWTSecret) < MinJWTSecret:
		errs = append(errs, fmt.Errorf("SECKILL_JWT_SECRET: %d bytes, production needs at least %d; %s", len(c.JWTSecret), MinJWTSecret, openssl))
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
	if c.SMSSender == SenderTencent && plainHTTP(c.SMSEndpoint) {
		errs = append(errs, errors.New("SECKILL_SMS_ENDPOINT: http:// is not allowed in production with SECKILL_SMS_SENDER=tencent (the login codes would travel in clear text); use https://, or leave it empty for Tencent Cloud's own address; SECKILL_ENV=development allows http:// (a local fake)"))
	}
	return errs
}

// checkSender accepts an empty sender (unset) or one of the senders.
func checkSender(s string) error {
	switch s {
	case "", SenderLog, SenderWebhook, SenderAliyun, SenderTencent:
		return nil
	}
	return notA(s, "one of log, webhook, aliyun, tencent")
}

// checkURL accepts an empty URL (unset) or an http(s) URL with a host;
// the error shows the URL masked (sms.RedactURL), never its userinfo or
// query values.
func checkURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return notA(sms.RedactURL(s), "an http(s) URL")
	}
	return nil
}

// plainHTTP reports whether s is an http:// URL (the scheme in any case).
func plainHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "http"
}

// checkListen accepts a listen address: host:port, the host may be
// empty (every interface) and the port 0 (any free one).
func checkListen(a string) error {
	if _, port, err := net.SplitHostPort(a); err != nil || (port != "0" && !validPort(port)) {
		return fmt.Errorf("%q is not host:port", a)
	}
	return nil
}

// checkHostPort accepts an empty address (unset) or host:port.
func checkHostPort(a string) error {
	if a != "" && !validHostPort(a) {
		return fmt.Errorf("%q is not host:port", a)
	}
	return nil
}

// checkDSN accepts an empty DSN (unset) or one the MySQL driver parses;
// the error never repeats the DSN, which may hold a password.
func checkDSN(dsn string) error {
	if dsn == "" {
		return nil
	}
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return fmt.Errorf("malformed: %v", err)
	}
	return nil
}

func validHostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	return err == nil && host != "" && validPort(port)
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
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
