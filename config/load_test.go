package config

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// merged returns base's variables with more's on top.
func merged(base, more map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, more)
	return m
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
		LockWaitTimeout: 100 * time.Millisecond,
		AutoRebuild:     true,
		OrderMode:       "sync", SyncGroupCommit: true, JWTTTL: 24 * time.Hour, Env: "development", RequestTimeout: 3 * time.Second, ShedTarget: 100 * time.Millisecond,
		APIStyle: "rest", ConsumerDuty: 0.25,
		CodeCooldown: time.Minute, AccessLog: 20, CodeDailyLimit: 10, CodeIPLimit: 30, PayTimeout: 15 * time.Minute, PayUnreachableGrace: 15 * time.Minute, ReconcileInterval: time.Hour,
		LogLevel: "info", StockBuckets: 1, Consumers: 1, ClaimIdle: 30 * time.Second,
		IdempotencyTTL: 24 * time.Hour, IdempotencyMaxKeys: 100, RedeemLimitStaff: 20, RedeemLimitShop: 120,
		WaitingRoomTokenTTL: time.Minute, WaitingRoomOverbook: 1.2, WaitingRoomRateLimit: 10,
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
		LockTTL:   1500 * time.Millisecond, LockWaitTimeout: 100 * time.Millisecond, AutoRebuild: true,
		RedlockAddrs:    []string{"127.0.0.1:6380", "127.0.0.1:6381", "127.0.0.1:6382"},
		ZKAddrs:         []string{"127.0.0.1:2181"},
		OrderMode:       "async",
		Fencing:         true,
		SyncGroupCommit: true,
		JWTSecret:       testSecret,
		JWTTTL:          2 * time.Hour,
		Env:             "production",
		RequestTimeout:  750 * time.Millisecond, ShedTarget: 100 * time.Millisecond,
		APIStyle:     "heima",
		ConsumerDuty: 0.5,
		CodeCooldown: 90 * time.Second, AccessLog: 20,
		PayTimeout: 5 * time.Second, PayUnreachableGrace: 15 * time.Minute, ReconcileInterval: time.Hour,
		CodeDailyLimit: 5,
		TrustedProxies: []string{"10.0.0.0/8", "192.168.1.7", "fd00::/8"},
		LogLevel:       "info", StockBuckets: 1, Consumers: 1, ClaimIdle: 30 * time.Second,
		IdempotencyTTL: 24 * time.Hour, IdempotencyMaxKeys: 100, RedeemLimitStaff: 20, RedeemLimitShop: 120,
		WaitingRoomTokenTTL: time.Minute, WaitingRoomOverbook: 1.2, WaitingRoomRateLimit: 10,
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

// TestOnOffValues: the switches read on and off in any case, blanks
// trimmed; unset is the default.
func TestOnOffValues(t *testing.T) {
	tests := []struct {
		name  string
		field func(Config) bool
		v     []string
		want  []bool
	}{
		{"SECKILL_FENCING", func(c Config) bool { return c.Fencing },
			[]string{"", "off", "OFF", "on", " On "}, []bool{false, false, false, true, true}},
		{"SECKILL_SYNC_GROUP_COMMIT", func(c Config) bool { return c.SyncGroupCommit },
			[]string{"", "on", " ON ", "off", "Off"}, []bool{true, true, true, false, false}},
		{"SECKILL_CONSUMER_LOCK", func(c Config) bool { return c.ConsumerLock },
			[]string{"", "off", "on", " On "}, []bool{false, false, true, true}},
	}
	for _, tt := range tests {
		for i, v := range tt.v {
			c, err := Load(env(map[string]string{tt.name: v}))
			if err != nil {
				t.Errorf("%s=%q: got %v, want nil", tt.name, v, err)
				continue
			}
			if got := tt.field(c); got != tt.want[i] {
				t.Errorf("%s=%q: got %v, want %v", tt.name, v, got, tt.want[i])
			}
		}
	}
	if _, err := Load(env(map[string]string{"SECKILL_SYNC_GROUP_COMMIT": "yes"})); err == nil || !strings.Contains(err.Error(), "SECKILL_SYNC_GROUP_COMMIT") {
		t.Errorf("SECKILL_SYNC_GROUP_COMMIT=yes: got %v, want an error naming the variable", err)
	}
}

// TestEnvDefault: with no SECKILL_ENV the service runs in development only
// when both backends are embedded (`go run .` on one machine). With a real
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

// TestClaimIdleBatchTimeout: a claim idle time as long as the consumers'
// batch timeout (8s) is accepted.
func TestClaimIdleBatchTimeout(t *testing.T) {
	c, err := Load(env(map[string]string{"SECKILL_CLAIM_IDLE": "8s"}))
	if err != nil || c.ClaimIdle != 8*time.Second {
		t.Fatalf("got %v, %v, want 8s, nil", c.ClaimIdle, err)
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

// TestAutoRebuild: on by default, off on request.
func TestAutoRebuild(t *testing.T) {
	for v, want := range map[string]bool{"": true, "on": true, "off": false} {
		c, err := Load(env(map[string]string{"SECKILL_AUTO_REBUILD": v}))
		if err != nil || c.AutoRebuild != want {
			t.Errorf("SECKILL_AUTO_REBUILD=%q: got %v, %v, want %v", v, c.AutoRebuild, err, want)
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
