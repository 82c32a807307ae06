package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"seckill/internal/testcert"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// A production secret of the right length, and real backends' settings
// (Load only parses them).
const (
	testSecret = "config-test-secret-0123456789abcdef"
	realDSN    = "seckill:seckill@tcp(127.0.0.1:3306)/seckill"
	realRedis  = "127.0.0.1:6379"
)

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatalf("Load with no environment: got %v, want nil", err)
	}
	want := Config{
		HTTPAddr: "127.0.0.1:8080", DataDir: "./data", LockMode: "lua", LockTTL: 10 * time.Second,
		LockWaitTimeout:  100 * time.Millisecond,
		AutoRebuildAfter: 10 * time.Second,
		OrderMode:        "sync", SyncGroupCommit: true, JWTTTL: 24 * time.Hour, Env: "development", RequestTimeout: 3 * time.Second,
		APIStyle: "rest", ConsumerDuty: 0.25,
		CodeCooldown: time.Minute, AccessLog: 20, CodeDailyLimit: 10, CodeIPLimit: 30, PayTimeout: 15 * time.Minute,
		LogLevel: "info", StockBuckets: 1, Consumers: 1, ClaimIdle: 30 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if c.MySQLDSN != "" || c.RedisAddr != "" {
		t.Errorf("backends: got DSN %q, Redis %q, want both empty (embedded)", c.MySQLDSN, c.RedisAddr)
	}
	secret, dev := c.Secret()
	if secret != DevJWTSecret || !dev {
		t.Errorf("Secret: got %q, %v, want the development secret, true", secret, dev)
	}
}

func TestEnvOverrides(t *testing.T) {
	c, err := Load(env(map[string]string{
		"SECKILL_HTTP_ADDR":          "127.0.0.1:9090",
		"SECKILL_MYSQL_DSN":          "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=Local",
		"SECKILL_DATA_DIR":           "/tmp/seckill-data",
		"SECKILL_REDIS_ADDR":         "127.0.0.1:6379",
		"SECKILL_LOCK_MODE":          "zookeeper",
		"SECKILL_LOCK_TTL":           "1500ms",
		"SECKILL_REDLOCK_ADDRS":      " 127.0.0.1:6380, 127.0.0.1:6381 ,,127.0.0.1:6382",
		"SECKILL_ZK_ADDRS":           "127.0.0.1:2181",
		"SECKILL_ORDER_MODE":         "async",
		"SECKILL_FENCING":            "ON",
		"SECKILL_JWT_SECRET":         testSecret,
		"SECKILL_JWT_TTL":            "2h",
		"SECKILL_ENV":                "production",
		"SECKILL_REQUEST_TIMEOUT":    "750ms",
		"SECKILL_DEV_CRITICAL_DELAY": "",
		"SECKILL_API_STYLE":          "heima",
		"SECKILL_CONSUMER_DUTY":      "0.5",
		"SECKILL_CODE_COOLDOWN":      "90s",
		"SECKILL_PAY_TIMEOUT":        "5s",
		"SECKILL_CODE_DAILY_LIMIT":   "5",
		"SECKILL_CODE_IP_LIMIT":      "0",
		"SECKILL_TRUSTED_PROXIES":    "10.0.0.0/8, 192.168.1.7,fd00::/8",
	}))
	if err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	want := Config{
		HTTPAddr:  "127.0.0.1:9090",
		MySQLDSN:  "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=Local",
		DataDir:   "/tmp/seckill-data",
		RedisAddr: "127.0.0.1:6379",
		LockMode:  "zookeeper",
		LockTTL:   1500 * time.Millisecond, LockWaitTimeout: 100 * time.Millisecond, AutoRebuildAfter: 10 * time.Second,
		RedlockAddrs:    []string{"127.0.0.1:6380", "127.0.0.1:6381", "127.0.0.1:6382"},
		ZKAddrs:         []string{"127.0.0.1:2181"},
		OrderMode:       "async",
		Fencing:         true,
		SyncGroupCommit: true,
		JWTSecret:       testSecret,
		JWTTTL:          2 * time.Hour,
		Env:             "production",
		RequestTimeout:  750 * time.Millisecond,
		APIStyle:        "heima",
		ConsumerDuty:    0.5,
		CodeCooldown:    90 * time.Second, AccessLog: 20,
		PayTimeout:     5 * time.Second,
		CodeDailyLimit: 5,
		TrustedProxies: []string{"10.0.0.0/8", "192.168.1.7", "fd00::/8"},
		LogLevel:       "info", StockBuckets: 1, Consumers: 1, ClaimIdle: 30 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if secret, dev := c.Secret(); secret != testSecret || dev {
		t.Errorf("Secret: got %q, %v, want %q, false", secret, dev, testSecret)
	}
}

func TestEveryLockModeAccepted(t *testing.T) {
	for _, mode := range LockModes {
		m := map[string]string{"SECKILL_LOCK_MODE": mode}
		switch mode {
		case "zookeeper":
			m["SECKILL_ZK_ADDRS"] = "127.0.0.1:2181"
		case "mysql":
			m["SECKILL_MYSQL_DSN"] = "root:@tcp(127.0.0.1:3306)/seckill"
			m["SECKILL_JWT_SECRET"] = testSecret // a real database: production
			m["SECKILL_REDIS_ADDR"] = "127.0.0.1:6379"
		}
		c, err := Load(env(m))
		if err != nil {
			t.Errorf("mode %s: got %v, want nil", mode, err)
			continue
		}
		if c.LockMode != mode {
			t.Errorf("mode: got %q, want %q", c.LockMode, mode)
		}
	}
}

func TestFencingValues(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"", false}, {"off", false}, {"OFF", false}, {"on", true}, {" On ", true},
	}
	for _, tt := range tests {
		c, err := Load(env(map[string]string{"SECKILL_FENCING": tt.v}))
		if err != nil {
			t.Errorf("SECKILL_FENCING=%q: got %v, want nil", tt.v, err)
			continue
		}
		if c.Fencing != tt.want {
			t.Errorf("SECKILL_FENCING=%q: got %v, want %v", tt.v, c.Fencing, tt.want)
		}
	}
}

func TestSyncGroupCommitValues(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"", true}, {"on", true}, {" ON ", true}, {"off", false}, {"Off", false},
	}
	for _, tt := range tests {
		c, err := Load(env(map[string]string{"SECKILL_SYNC_GROUP_COMMIT": tt.v}))
		if err != nil {
			t.Errorf("SECKILL_SYNC_GROUP_COMMIT=%q: got %v, want nil", tt.v, err)
			continue
		}
		if c.SyncGroupCommit != tt.want {
			t.Errorf("SECKILL_SYNC_GROUP_COMMIT=%q: got %v, want %v", tt.v, c.SyncGroupCommit, tt.want)
		}
	}
	if _, err := Load(env(map[string]string{"SECKILL_SYNC_GROUP_COMMIT": "yes"})); err == nil || !strings.Contains(err.Error(), "SECKILL_SYNC_GROUP_COMMIT") {
		t.Errorf("SECKILL_SYNC_GROUP_COMMIT=yes: got %v, want an error naming the variable", err)
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"unknown lock mode", map[string]string{"SECKILL_LOCK_MODE": "redis"}, "SECKILL_LOCK_MODE"},
		{"consumer duty zero", map[string]string{"SECKILL_CONSUMER_DUTY": "0"}, "SECKILL_CONSUMER_DUTY"},
		{"consumer duty above 1", map[string]string{"SECKILL_CONSUMER_DUTY": "1.5"}, "SECKILL_CONSUMER_DUTY"},
		{"consumer duty NaN", map[string]string{"SECKILL_CONSUMER_DUTY": "NaN"}, "SECKILL_CONSUMER_DUTY"},
		{"consumer duty percent", map[string]string{"SECKILL_CONSUMER_DUTY": "25%"}, "SECKILL_CONSUMER_DUTY"},
		{"wait replicas not a number", map[string]string{"SECKILL_LOCK_WAIT_REPLICAS": "one"}, "SECKILL_LOCK_WAIT_REPLICAS"},
		{"wait replicas negative", map[string]string{"SECKILL_LOCK_WAIT_REPLICAS": "-1"}, "SECKILL_LOCK_WAIT_REPLICAS"},
		{"wait replicas with redsync", map[string]string{"SECKILL_LOCK_WAIT_REPLICAS": "1", "SECKILL_LOCK_MODE": "redsync"}, "SECKILL_LOCK_WAIT_REPLICAS"},
		{"wait replicas with simple", map[string]string{"SECKILL_LOCK_WAIT_REPLICAS": "2", "SECKILL_LOCK_MODE": "simple"}, "SECKILL_LOCK_WAIT_REPLICAS"},
		{"wait timeout zero", map[string]string{"SECKILL_LOCK_WAIT_TIMEOUT": "0s"}, "SECKILL_LOCK_WAIT_TIMEOUT"},
		{"wait timeout negative", map[string]string{"SECKILL_LOCK_WAIT_TIMEOUT": "-5ms"}, "SECKILL_LOCK_WAIT_TIMEOUT"},
		{"wait timeout not a duration", map[string]string{"SECKILL_LOCK_WAIT_TIMEOUT": "100"}, "SECKILL_LOCK_WAIT_TIMEOUT"},
		{"lock mode case", map[string]string{"SECKILL_LOCK_MODE": "LUA"}, "SECKILL_LOCK_MODE"},
		{"DSN without slash", map[string]string{"SECKILL_MYSQL_DSN": "not a dsn"}, "SECKILL_MYSQL_DSN"},
		{"DSN without protocol", map[string]string{"SECKILL_MYSQL_DSN": "root@127.0.0.1:3306/seckill"}, "SECKILL_MYSQL_DSN"},
		{"DSN bad parameter", map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/seckill?parseTime=maybe"}, "SECKILL_MYSQL_DSN"},
		{"DSN unclosed address", map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(127.0.0.1:3306/seckill"}, "SECKILL_MYSQL_DSN"},
		{"Redis without port", map[string]string{"SECKILL_REDIS_ADDR": "localhost"}, "SECKILL_REDIS_ADDR"},
		{"Redis empty port", map[string]string{"SECKILL_REDIS_ADDR": "localhost:"}, "SECKILL_REDIS_ADDR"},
		{"Redis without host", map[string]string{"SECKILL_REDIS_ADDR": ":6379"}, "SECKILL_REDIS_ADDR"},
		{"Redis URL", map[string]string{"SECKILL_REDIS_ADDR": "redis://localhost:6379/0"}, "SECKILL_REDIS_ADDR"},
		{"Redlock bad node", map[string]string{"SECKILL_REDLOCK_ADDRS": "127.0.0.1:6380,bad"}, "SECKILL_REDLOCK_ADDRS"},
		{"ZooKeeper bad node", map[string]string{"SECKILL_ZK_ADDRS": "zk"}, "SECKILL_ZK_ADDRS"},
		{"zookeeper mode without servers", map[string]string{"SECKILL_LOCK_MODE": "zookeeper"}, "SECKILL_ZK_ADDRS"},
		{"mysql mode on embedded database", map[string]string{"SECKILL_LOCK_MODE": "mysql"}, "SECKILL_MYSQL_DSN"},
		{"HTTP address without port", map[string]string{"SECKILL_HTTP_ADDR": "8080"}, "SECKILL_HTTP_ADDR"},
		{"unknown order mode", map[string]string{"SECKILL_ORDER_MODE": "batch"}, "SECKILL_ORDER_MODE"},
		{"fencing yes", map[string]string{"SECKILL_FENCING": "yes"}, "SECKILL_FENCING"},
		{"Redis TLS yes", map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development", "SECKILL_REDIS_TLS": "yes"}, "SECKILL_REDIS_TLS"},
		{"Redis TLS on embedded Redis", map[string]string{"SECKILL_REDIS_TLS": "on"}, "SECKILL_REDIS_TLS"},
		{"Redis password on embedded Redis", map[string]string{"SECKILL_REDIS_PASSWORD": "pw"}, "SECKILL_REDIS_PASSWORD"},
		{"Redis user without password", map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development", "SECKILL_REDIS_USERNAME": "app"}, "SECKILL_REDIS_PASSWORD"},
		{"Sentinel password without Sentinels", map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development", "SECKILL_REDIS_SENTINEL_PASSWORD": "pw"}, "SECKILL_REDIS_SENTINEL_PASSWORD"},
		{"unknown env", map[string]string{"SECKILL_ENV": "prod"}, "SECKILL_ENV"},
		{"production without secret", map[string]string{"SECKILL_ENV": "production"}, "SECKILL_JWT_SECRET"},
		{"dev delay in production", map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret, "SECKILL_DEV_CRITICAL_DELAY": "1s"}, "SECKILL_DEV_CRITICAL_DELAY"},
		{"lock TTL without unit", map[string]string{"SECKILL_LOCK_TTL": "10"}, "SECKILL_LOCK_TTL"},
		{"lock TTL negative", map[string]string{"SECKILL_LOCK_TTL": "-1s"}, "SECKILL_LOCK_TTL"},
		{"lock TTL zero", map[string]string{"SECKILL_LOCK_TTL": "0s"}, "SECKILL_LOCK_TTL"},
		{"JWT TTL zero", map[string]string{"SECKILL_JWT_TTL": "0s"}, "SECKILL_JWT_TTL"},
		{"JWT TTL garbage", map[string]string{"SECKILL_JWT_TTL": "a day"}, "SECKILL_JWT_TTL"},
		{"request timeout garbage", map[string]string{"SECKILL_REQUEST_TIMEOUT": "abc"}, "SECKILL_REQUEST_TIMEOUT"},
		{"request timeout zero", map[string]string{"SECKILL_REQUEST_TIMEOUT": "0"}, "SECKILL_REQUEST_TIMEOUT"},
		{"critical delay garbage", map[string]string{"SECKILL_DEV_CRITICAL_DELAY": "soon"}, "SECKILL_DEV_CRITICAL_DELAY"},
		{"claim idle shorter than a batch", map[string]string{"SECKILL_CLAIM_IDLE": "7999ms"}, "SECKILL_CLAIM_IDLE"},
		{"automatic rebuild sooner than a batch ends", map[string]string{"SECKILL_AUTO_REBUILD_AFTER": "5s"}, "SECKILL_AUTO_REBUILD_AFTER"},
		{"automatic rebuild garbage", map[string]string{"SECKILL_AUTO_REBUILD_AFTER": "later"}, "SECKILL_AUTO_REBUILD_AFTER"},
		{"code cooldown under a second", map[string]string{"SECKILL_CODE_COOLDOWN": "500ms"}, "SECKILL_CODE_COOLDOWN"},
		{"pay timeout under a second", map[string]string{"SECKILL_PAY_TIMEOUT": "500ms"}, "SECKILL_PAY_TIMEOUT"},
		{"pay timeout garbage", map[string]string{"SECKILL_PAY_TIMEOUT": "15"}, "SECKILL_PAY_TIMEOUT"},
		{"code cooldown garbage", map[string]string{"SECKILL_CODE_COOLDOWN": "60"}, "SECKILL_CODE_COOLDOWN"},
		{"code daily limit zero", map[string]string{"SECKILL_CODE_DAILY_LIMIT": "0"}, "SECKILL_CODE_DAILY_LIMIT"},
		{"code IP limit negative", map[string]string{"SECKILL_CODE_IP_LIMIT": "-1"}, "SECKILL_CODE_IP_LIMIT"},
		{"trusted proxy bad CIDR", map[string]string{"SECKILL_TRUSTED_PROXIES": "10.0.0.0/33"}, "SECKILL_TRUSTED_PROXIES"},
		{"trusted proxy host name", map[string]string{"SECKILL_TRUSTED_PROXIES": "10.0.0.1,proxy.local"}, "SECKILL_TRUSTED_PROXIES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(tt.env))
			if err == nil {
				t.Fatalf("got nil, want an error naming %s", tt.wantVar)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantVar+":") {
				t.Errorf("got %q, want one line starting with %q", msg, tt.wantVar+":")
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line", msg)
			}
		})
	}
}

func TestInvalidReportsEveryVariable(t *testing.T) {
	_, err := Load(env(map[string]string{
		"SECKILL_LOCK_MODE":  "bogus",
		"SECKILL_ORDER_MODE": "bogus",
		"SECKILL_REDIS_ADDR": "bogus",
	}))
	if err == nil {
		t.Fatal("got nil, want an error")
	}
	for _, v := range []string{"SECKILL_LOCK_MODE", "SECKILL_ORDER_MODE", "SECKILL_REDIS_ADDR"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("got %q, want it to name %s", err, v)
		}
	}
}

func TestDSNErrorHidesPassword(t *testing.T) {
	_, err := Load(env(map[string]string{"SECKILL_MYSQL_DSN": "root:hunter2@tcp(127.0.0.1:3306)/seckill?parseTime=maybe"}))
	if err == nil {
		t.Fatal("got nil, want an error")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("got %q, want no password in the error", err)
	}
}

func logLine(t *testing.T, c Config) string {
	t.Helper()
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", c)
	return buf.String()
}

func TestLogValueMasksSecrets(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantIn  []string
		wantNot []string
	}{
		{
			name: "password and secret",
			env: map[string]string{
				"SECKILL_MYSQL_DSN":  "seckill:hunter2@tcp(127.0.0.1:3306)/seckill?parseTime=true",
				"SECKILL_JWT_SECRET": "jwt-very-secret-0123456789abcdef",
				"SECKILL_REDIS_ADDR": "127.0.0.1:6379",
			},
			wantIn:  []string{`seckill:***@tcp(127.0.0.1:3306)/seckill`, `"jwt_secret":"***"`, `"redis_addr":"127.0.0.1:6379"`, `"lock_mode":"lua"`},
			wantNot: []string{"hunter2", "jwt-very-secret"},
		},
		{
			name: "Redis passwords",
			env: map[string]string{
				"SECKILL_REDIS_SENTINEL_ADDRS":    "127.0.0.1:26379",
				"SECKILL_REDIS_MASTER":            "seckill",
				"SECKILL_REDIS_USERNAME":          "app",
				"SECKILL_REDIS_PASSWORD":          "redis-pa55",
				"SECKILL_REDIS_SENTINEL_PASSWORD": "sentinel-pa55",
				"SECKILL_REDIS_TLS_CA":            "/etc/redis/ca.pem",
				"SECKILL_ENV":                     "development",
			},
			wantIn:  []string{`"redis_username":"app"`, `"redis_password":"***"`, `"redis_sentinel_password":"***"`, `"redis_tls":true`, `"redis_tls_ca":"/etc/redis/ca.pem"`},
			wantNot: []string{"redis-pa55", "sentinel-pa55"},
		},
		{
			name:    "no Redis password",
			env:     map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development"},
			wantIn:  []string{`"redis_password":""`, `"redis_tls":false`},
			wantNot: []string{`"***"`},
		},
		{
			name:    "embedded and development secret",
			env:     nil,
			wantIn:  []string{`"mysql_dsn":"(embedded)"`, `"redis_addr":"(embedded)"`, `"jwt_secret":"(development default)"`},
			wantNot: []string{DevJWTSecret},
		},
		{
			name:    "DSN without password",
			env:     map[string]string{"SECKILL_MYSQL_DSN": "root@tcp(db:3306)/seckill", "SECKILL_ENV": "development"},
			wantIn:  []string{`root@tcp(db:3306)/seckill`},
			wantNot: []string{"***@"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			line := logLine(t, c)
			for _, s := range tt.wantIn {
				if !strings.Contains(line, s) {
					t.Errorf("log line %s: want %q in it", line, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(line, s) {
					t.Errorf("log line %s: leaks %q", line, s)
				}
			}
		})
	}
}

// TestEnvDefault: with no SECKILL_ENV the service runs in development only
// when both backends are embedded (`go run .` on one machine); with a real
// MySQL or Redis it runs in production unless development is asked for.
func TestEnvDefault(t *testing.T) {
	const dsn, redis = realDSN, realRedis
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"both embedded", nil, "development"},
		{"real MySQL", map[string]string{"SECKILL_MYSQL_DSN": dsn}, "production"},
		{"real Redis", map[string]string{"SECKILL_REDIS_ADDR": redis}, "production"},
		{"both real", map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_REDIS_ADDR": redis}, "production"},
		{"both real, development asked for", map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_REDIS_ADDR": redis, "SECKILL_ENV": "development"}, "development"},
		{"embedded, production asked for", map[string]string{"SECKILL_ENV": "production"}, "production"},
		{"blank SECKILL_ENV", map[string]string{"SECKILL_REDIS_ADDR": redis, "SECKILL_ENV": "  "}, "production"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Load validates too (production needs a secret and both
			// backends): the environment is decided before.
			c, _ := Load(env(tt.env))
			if c.Env != tt.want {
				t.Errorf("Env: got %q, want %q", c.Env, tt.want)
			}
		})
	}
}

// TestRealBackendsNeedSecret: real backends without SECKILL_ENV and without
// a secret refuse to start with one line naming SECKILL_JWT_SECRET, never
// falling back to the public development secret.
func TestRealBackendsNeedSecret(t *testing.T) {
	for _, m := range []map[string]string{
		{"SECKILL_MYSQL_DSN": "seckill:seckill@tcp(127.0.0.1:3306)/seckill"},
		{"SECKILL_REDIS_ADDR": "127.0.0.1:6379"},
		{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_DEV_CRITICAL_DELAY": "1s", "SECKILL_JWT_SECRET": testSecret},
		{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_DEV_CONSUMER_DELAY": "1s", "SECKILL_JWT_SECRET": testSecret},
	} {
		_, err := Load(env(m))
		if err == nil {
			t.Errorf("%v: got nil, want a refusal", m)
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "SECKILL_") {
			t.Errorf("%v: got %q, want one line naming the variable", m, err)
		}
		if _, ok := m["SECKILL_JWT_SECRET"]; !ok && !strings.HasPrefix(err.Error(), "SECKILL_JWT_SECRET:") {
			t.Errorf("%v: got %q, want it to name SECKILL_JWT_SECRET", m, err)
		}
	}
}

// TestClaimIdleBatchTimeout: a claim idle time as long as the consumers'
// batch timeout (8s) is accepted.
func TestClaimIdleBatchTimeout(t *testing.T) {
	c, err := Load(env(map[string]string{"SECKILL_CLAIM_IDLE": "8s"}))
	if err != nil || c.ClaimIdle != 8*time.Second {
		t.Fatalf("got %v, %v, want 8s, nil", c.ClaimIdle, err)
	}
}

// TestSentinel: SECKILL_REDIS_SENTINEL_ADDRS with SECKILL_REDIS_MASTER select
// a Sentinel-managed Redis, a real one (production by default), logged as
// such.
func TestSentinel(t *testing.T) {
	c, err := Load(env(map[string]string{
		"SECKILL_REDIS_SENTINEL_ADDRS": " 127.0.0.1:26390, 127.0.0.1:26391 ,,[::1]:26392",
		"SECKILL_REDIS_MASTER":         " seckill ",
		"SECKILL_JWT_SECRET":           testSecret,
		"SECKILL_MYSQL_DSN":            realDSN,
	}))
	if err != nil {
		t.Fatalf("Load: got %v, want nil", err)
	}
	if want := []string{"127.0.0.1:26390", "127.0.0.1:26391", "[::1]:26392"}; !reflect.DeepEqual(c.RedisSentinelAddrs, want) {
		t.Errorf("RedisSentinelAddrs: got %q, want %q", c.RedisSentinelAddrs, want)
	}
	if c.RedisMaster != "seckill" || c.RedisAddr != "" {
		t.Errorf("RedisMaster, RedisAddr: got %q, %q, want seckill and empty", c.RedisMaster, c.RedisAddr)
	}
	if !c.Sentinel() || !c.RealRedis() {
		t.Errorf("Sentinel, RealRedis: got %v, %v, want true, true", c.Sentinel(), c.RealRedis())
	}
	if c.Env != EnvProduction {
		t.Errorf("Env: got %q, want production (a real Redis)", c.Env)
	}
	line := logLine(t, c)
	for _, s := range []string{`"redis_addr":"(sentinel)"`, `"redis_sentinel_addrs":["127.0.0.1:26390","127.0.0.1:26391","[::1]:26392"]`, `"redis_master":"seckill"`} {
		if !strings.Contains(line, s) {
			t.Errorf("log line %s: want %q in it", line, s)
		}
	}
	if _, err := Load(env(map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390", "SECKILL_REDIS_MASTER": "m"})); err == nil ||
		!strings.HasPrefix(err.Error(), "SECKILL_JWT_SECRET:") {
		t.Errorf("Sentinel without a secret: got %v, want a refusal naming SECKILL_JWT_SECRET", err)
	}
	plain, err := Load(env(nil))
	if err != nil || plain.Sentinel() || plain.RealRedis() {
		t.Errorf("no Redis configured: got Sentinel %v, RealRedis %v, err %v, want false, false, nil", plain.Sentinel(), plain.RealRedis(), err)
	}
}

// TestSentinelInvalid: every wrong combination of the Sentinel variables is
// one line naming the variable (both Redis kinds set: naming both).
func TestSentinelInvalid(t *testing.T) {
	const sentinels = "127.0.0.1:26390,127.0.0.1:26391"
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
		wantIn  string
	}{
		{"both Redis kinds", map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_REDIS_SENTINEL_ADDRS": sentinels, "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", "SECKILL_REDIS_ADDR"},
		{"sentinels without master", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": sentinels}, "SECKILL_REDIS_MASTER", "SECKILL_REDIS_SENTINEL_ADDRS"},
		{"master without sentinels", map[string]string{"SECKILL_REDIS_MASTER": "seckill"}, "SECKILL_REDIS_SENTINEL_ADDRS", "SECKILL_REDIS_MASTER"},
		{"sentinel without port", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390,sentinel", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `"sentinel"`},
		{"sentinel bad port", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:263900", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `"127.0.0.1:263900"`},
		{"sentinel without host", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": ":26390", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `":26390"`},
		{"sentinel URL", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "redis://127.0.0.1:26390", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", "not host:port"},
		{"blank master", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": sentinels, "SECKILL_REDIS_MASTER": "  "}, "SECKILL_REDIS_MASTER", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{"SECKILL_JWT_SECRET": testSecret}
			for k, v := range tt.env {
				m[k] = v
			}
			_, err := Load(env(m))
			if err == nil {
				t.Fatalf("got nil, want an error naming %s", tt.wantVar)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantVar+":") || !strings.Contains(msg, tt.wantIn) {
				t.Errorf("got %q, want one line starting with %q and naming %s", msg, tt.wantVar+":", tt.wantIn)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line", msg)
			}
		})
	}
}

// TestLockWaitReplicas: SECKILL_LOCK_WAIT_REPLICAS and
// SECKILL_LOCK_WAIT_TIMEOUT are read for lua and reentrant; 0 is allowed
// with every mode.
func TestLockWaitReplicas(t *testing.T) {
	for _, mode := range []string{"lua", "reentrant"} {
		c, err := Load(env(map[string]string{"SECKILL_LOCK_MODE": mode,
			"SECKILL_LOCK_WAIT_REPLICAS": " 2 ", "SECKILL_LOCK_WAIT_TIMEOUT": "250ms"}))
		if err != nil || c.LockWaitReplicas != 2 || c.LockWaitTimeout != 250*time.Millisecond {
			t.Errorf("%s: got %d, %v, %v, want 2, 250ms, nil", mode, c.LockWaitReplicas, c.LockWaitTimeout, err)
		}
	}
	for _, mode := range LockModes {
		if mode == "mysql" || mode == "zookeeper" {
			continue // they need their servers configured
		}
		if _, err := Load(env(map[string]string{"SECKILL_LOCK_MODE": mode, "SECKILL_LOCK_WAIT_REPLICAS": "0"})); err != nil {
			t.Errorf("%s with 0 replicas: %v", mode, err)
		}
	}
	_, err := Load(env(map[string]string{"SECKILL_LOCK_MODE": "multi", "SECKILL_LOCK_WAIT_REPLICAS": "1"}))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "SECKILL_LOCK_WAIT_REPLICAS:") {
		t.Errorf("multi with 1 replica: got %v, want one line naming SECKILL_LOCK_WAIT_REPLICAS", err)
	}
}

// TestAutoRebuildAfter: 10s by default, 0 turns it off, 8s is the least.
func TestAutoRebuildAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 10 * time.Second, "0": 0, "8s": 8 * time.Second, "1m": time.Minute} {
		c, err := Load(env(map[string]string{"SECKILL_AUTO_REBUILD_AFTER": v}))
		if err != nil || c.AutoRebuildAfter != want {
			t.Errorf("SECKILL_AUTO_REBUILD_AFTER=%q: got %v, %v, want %v", v, c.AutoRebuildAfter, err, want)
		}
	}
}

// TestAPIStyle: rest by default, heima on request, anything else refused
// with one line naming the variable.
func TestAPIStyle(t *testing.T) {
	for v, want := range map[string]string{"": "rest", "rest": "rest", "heima": "heima", " heima ": "heima"} {
		c, err := Load(env(map[string]string{"SECKILL_API_STYLE": v}))
		if err != nil || c.APIStyle != want {
			t.Errorf("SECKILL_API_STYLE=%q: got %q, %v, want %q", v, c.APIStyle, err, want)
		}
	}
	for _, v := range []string{"vue", "HEIMA", "rest,heima"} {
		_, err := Load(env(map[string]string{"SECKILL_API_STYLE": v}))
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_API_STYLE: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("SECKILL_API_STYLE=%q: got %v, want one line naming SECKILL_API_STYLE", v, err)
		}
	}
}

// TestCluster: SECKILL_REDIS_CLUSTER_ADDRS selects a Redis Cluster, a real
// Redis (production by default), logged as such; set with either other
// Redis setting, or with a malformed seed, or with replica-synced locks
// (WAIT cannot follow a grant through the cluster client), the start is
// refused with one line naming the variable.
func TestCluster(t *testing.T) {
	const seeds = "127.0.0.1:7001, 127.0.0.1:7002,,127.0.0.1:7003"
	c, err := Load(env(map[string]string{"SECKILL_REDIS_CLUSTER_ADDRS": seeds, "SECKILL_JWT_SECRET": testSecret, "SECKILL_MYSQL_DSN": realDSN}))
	if err != nil {
		t.Fatalf("Load: got %v, want nil", err)
	}
	if want := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}; !reflect.DeepEqual(c.RedisClusterAddrs, want) {
		t.Errorf("RedisClusterAddrs: got %q, want %q", c.RedisClusterAddrs, want)
	}
	if !c.Cluster() || !c.RealRedis() || c.Sentinel() || c.Env != EnvProduction {
		t.Errorf("Cluster, RealRedis, Sentinel, Env: got %v, %v, %v, %q, want true, true, false, production", c.Cluster(), c.RealRedis(), c.Sentinel(), c.Env)
	}
	line := logLine(t, c)
	for _, s := range []string{`"redis_addr":"(cluster)"`, `"redis_cluster_addrs":["127.0.0.1:7001","127.0.0.1:7002","127.0.0.1:7003"]`} {
		if !strings.Contains(line, s) {
			t.Errorf("log line %s: want %q in it", line, s)
		}
	}
	for name, vars := range map[string]map[string]string{
		"with SECKILL_REDIS_ADDR":           {"SECKILL_REDIS_ADDR": "127.0.0.1:6379"},
		"with Sentinel":                     {"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390", "SECKILL_REDIS_MASTER": "m"},
		"malformed seed":                    {"SECKILL_REDIS_CLUSTER_ADDRS": "127.0.0.1:7001,node"},
		"with SECKILL_LOCK_WAIT_REPLICAS=1": {"SECKILL_LOCK_WAIT_REPLICAS": "1"},
	} {
		vars["SECKILL_JWT_SECRET"] = testSecret
		if vars["SECKILL_REDIS_CLUSTER_ADDRS"] == "" {
			vars["SECKILL_REDIS_CLUSTER_ADDRS"] = seeds
		}
		want := "SECKILL_REDIS_CLUSTER_ADDRS:"
		if name == "with SECKILL_LOCK_WAIT_REPLICAS=1" {
			want = "SECKILL_LOCK_WAIT_REPLICAS:"
		}
		if _, err := Load(env(vars)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal naming %s", name, err, want)
		}
	}
}

// TestProductionRefusesWeakStarts: production refuses a JWT secret shorter
// than 32 bytes, the public development secret, and an embedded database or
// Redis, each with one line naming the variable.
func TestProductionRefusesWeakStarts(t *testing.T) {
	real := func(more map[string]string) map[string]string {
		m := map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"1-byte secret", real(map[string]string{"SECKILL_JWT_SECRET": "s"}), "SECKILL_JWT_SECRET"},
		{"31-byte secret", real(map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("k", 31)}), "SECKILL_JWT_SECRET"},
		{"the development secret", real(map[string]string{"SECKILL_JWT_SECRET": DevJWTSecret}), "SECKILL_JWT_SECRET"},
		{"the compose file's old default", real(map[string]string{"SECKILL_JWT_SECRET": "compose-dev-secret-change-me"}), "SECKILL_JWT_SECRET"},
		{"embedded database", real(map[string]string{"SECKILL_MYSQL_DSN": ""}), "SECKILL_MYSQL_DSN"},
		{"embedded Redis", real(map[string]string{"SECKILL_REDIS_ADDR": "", "SECKILL_ENV": "production"}), "SECKILL_REDIS_ADDR"},
		{"nothing but production", map[string]string{"SECKILL_ENV": "production", "SECKILL_JWT_SECRET": testSecret}, "SECKILL_MYSQL_DSN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(tt.env))
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantVar+":") || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line starting with %s:", err, tt.wantVar)
			}
		})
	}
	if _, err := Load(env(real(map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("k", MinJWTSecret)}))); err != nil {
		t.Errorf("a %d-byte secret on real backends: got %v, want nil", MinJWTSecret, err)
	}
	if _, err := Load(env(real(map[string]string{"SECKILL_ENV": "development", "SECKILL_JWT_SECRET": "s"}))); err != nil {
		t.Errorf("development asked for explicitly, short secret: got %v, want nil", err)
	}
}

// TestListenAddressDefault: unset, the address is loopback in development
// and every interface in production; set, it is what was given.
func TestListenAddressDefault(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"development", nil, "127.0.0.1:8080"},
		{"development on real backends", map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_ENV": "development"}, "127.0.0.1:8080"},
		{"production", map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret}, ":8080"},
		{"development, every interface asked for", map[string]string{"SECKILL_HTTP_ADDR": ":8080"}, ":8080"},
		{"production, one interface asked for", map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret, "SECKILL_HTTP_ADDR": "10.0.0.5:9000"}, "10.0.0.5:9000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.HTTPAddr != tt.want {
				t.Errorf("HTTPAddr: got %q, want %q", c.HTTPAddr, tt.want)
			}
		})
	}
}

// TestRedisAuth: the Redis credentials are read as given, SECKILL_REDIS_TLS
// is on or off, and a CA file turns TLS on.
func TestRedisAuth(t *testing.T) {
	base := map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development"}
	with := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	c, err := Load(env(with(map[string]string{"SECKILL_REDIS_USERNAME": " app ", "SECKILL_REDIS_PASSWORD": " pa ss "})))
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisUsername != "app" || c.RedisPassword != " pa ss " || c.RedisTLS || c.RedisTLSCA != "" {
		t.Errorf("got user %q, password %q, TLS %v, CA %q; want app, \" pa ss \" (as given), off, none",
			c.RedisUsername, c.RedisPassword, c.RedisTLS, c.RedisTLSCA)
	}
	for _, tt := range []struct {
		tls, ca string
		want    bool
	}{{"", "", false}, {"off", "", false}, {"OFF", "", false}, {"on", "", true}, {" On ", "", true}, {"", "/ca.pem", true}, {"off", "/ca.pem", true}} {
		c, err := Load(env(with(map[string]string{"SECKILL_REDIS_TLS": tt.tls, "SECKILL_REDIS_TLS_CA": tt.ca})))
		if err != nil {
			t.Errorf("SECKILL_REDIS_TLS=%q SECKILL_REDIS_TLS_CA=%q: got %v, want nil", tt.tls, tt.ca, err)
			continue
		}
		if c.RedisTLS != tt.want {
			t.Errorf("SECKILL_REDIS_TLS=%q SECKILL_REDIS_TLS_CA=%q: got TLS %v, want %v", tt.tls, tt.ca, c.RedisTLS, tt.want)
		}
	}
	c, err = Load(env(with(map[string]string{
		"SECKILL_REDIS_ADDR": "", "SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26379", "SECKILL_REDIS_MASTER": "m",
		"SECKILL_REDIS_SENTINEL_PASSWORD": "sp",
	})))
	if err != nil || c.RedisSentinelPassword != "sp" {
		t.Errorf("Sentinel password: got %q, %v, want sp, nil", c.RedisSentinelPassword, err)
	}
}

// TestRedisTLSConfig: the TLS settings trust the CA of SECKILL_REDIS_TLS_CA
// (the system's without it), require TLS 1.2, and a CA file that cannot be
// read or holds no certificate is an error naming the variable.
func TestRedisTLSConfig(t *testing.T) {
	off := Config{}
	if tc, err := off.RedisTLSConfig(); tc != nil || err != nil {
		t.Errorf("TLS off: got %v, %v, want nil, nil", tc, err)
	}
	system := Config{RedisTLS: true}
	tc, err := system.RedisTLSConfig()
	if err != nil || tc == nil || tc.RootCAs != nil || tc.MinVersion != tls.VersionTLS12 || tc.ServerName != "" {
		t.Errorf("TLS on without CA: got %+v, %v, want the system's CAs, TLS 1.2, no server name", tc, err)
	}

	dir := t.TempDir()
	files, err := testcert.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{RedisTLS: true, RedisTLSCA: files.CA}
	tc, err = c.RedisTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if tc.MinVersion != tls.VersionTLS12 || tc.InsecureSkipVerify || tc.ServerName != "" {
		t.Errorf("got MinVersion %x, InsecureSkipVerify %v, ServerName %q, want TLS 1.2, false, empty", tc.MinVersion, tc.InsecureSkipVerify, tc.ServerName)
	}
	// The server certificate verifies against RootCAs, and only them.
	pemBytes, err := os.ReadFile(files.Cert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("server certificate against RootCAs: %v, want verified", err)
	}
	other, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	oc, err := (&Config{RedisTLS: true, RedisTLSCA: other.CA}).RedisTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: oc.RootCAs}); err == nil {
		t.Error("server certificate against another CA: verified, want an error")
	}

	noCert := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noCert, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"missing file":   filepath.Join(dir, "missing.pem"),
		"no certificate": noCert,
		"private key":    files.Key,
		"directory":      dir,
	} {
		_, err := (&Config{RedisTLS: true, RedisTLSCA: path}).RedisTLSConfig()
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_REDIS_TLS_CA: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line starting with SECKILL_REDIS_TLS_CA:", name, err)
		}
	}
}

// TestTracingOn: the OTEL_* variables that turn tracing on, and off.
func TestTracingOn(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	}
	for _, tt := range tests {
		if got := tracingOn(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: got %v, want %v", tt.env, got, tt.want)
		}
	}
}
