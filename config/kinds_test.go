package config

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/model"
)

// TestParsersBounds: each parser accepts its bounds and refuses one step
// past them, naming the variable in one line and keeping the default.
func TestParsersBounds(t *testing.T) {
	batch := ConsumerBatchTimeout
	tests := []struct {
		name    string
		ok, bad []string
	}{
		{"SECKILL_STOCK_BUCKETS", []string{"1", " 2 ", strconv.Itoa(model.MaxStockBuckets)}, []string{"0", strconv.Itoa(model.MaxStockBuckets + 1), "x", "1.5"}},
		{"SECKILL_WAITING_ROOM", []string{"on", "OFF"}, []string{"yes", "1"}},
		{"SECKILL_WAITING_ROOM_TOKEN_TTL", []string{"1s", "60s"}, []string{"999ms", "0", "60"}},
		{"SECKILL_WAITING_ROOM_OVERBOOK", []string{"1", "1.2", "10"}, []string{"0.99", "10.5", "NaN", "x"}},
		{"SECKILL_CONSUMERS", []string{"1", "64"}, []string{"0", "65", "-1"}},
		{"SECKILL_LOCK_WAIT_REPLICAS", []string{"0", "3"}, []string{"-1", "one"}},
		{"SECKILL_RATE_LIMIT", []string{"0", "100000"}, []string{"-3", "ten", "9999999999999999999999"}},
		{"SECKILL_CODE_DAILY_LIMIT", []string{"1"}, []string{"0"}},
		{"SECKILL_IDEMPOTENCY_MAX_KEYS", []string{"1", "1000"}, []string{"0", "-1", "many"}},
		{"SECKILL_IDEMPOTENCY_TTL", []string{"1s", "48h"}, []string{"999ms", "24", "-1h"}},
		{"SECKILL_CONSUMER_DUTY", []string{"0.05", "1", ".5"}, []string{"0.04", "1.01", "NaN", "Inf", "25%"}},
		{"SECKILL_PAY_TIMEOUT", []string{"1s", "2h"}, []string{"999ms", "15", "-1s"}},
		{"SECKILL_LOCK_TTL", []string{"1ns", "10s"}, []string{"0", "0s", "-1s", "ten seconds"}},
		{"SECKILL_CLAIM_IDLE", []string{batch.String(), "1h"}, []string{(batch - time.Millisecond).String(), "0"}},
		{"SECKILL_AUTO_REBUILD", []string{"on", "off"}, []string{"0", "10s"}},
		{"SECKILL_DEV_CRITICAL_DELAY", []string{"0", "1ms"}, []string{"-1ms", "soon"}},
		{"SECKILL_FENCING", []string{"on", "OFF", " On "}, []string{"yes", "1", "true", "o n"}},
		{"SECKILL_ORDER_MODE", []string{"sync", " async "}, []string{"ASYNC", "sync,async"}},
		{"SECKILL_LOG_LEVEL", []string{"debug", "error"}, []string{"verbose", "INFO"}},
		{"SECKILL_ZK_ADDRS", []string{"127.0.0.1:2181, [::1]:2181,,"}, []string{"127.0.0.1:2181,zk", "127.0.0.1:0"}},
		{"SECKILL_TRUSTED_PROXIES", []string{"10.0.0.0/8,::1"}, []string{"10.0.0.0/33", "proxy.local"}},
		{"SECKILL_HTTP_ADDR", []string{":0", "127.0.0.1:9000"}, []string{"8080", "127.0.0.1:70000"}},
	}
	def := Default()
	for _, tt := range tests {
		for _, v := range tt.ok {
			if _, err := Load(env(map[string]string{tt.name: v})); err != nil {
				t.Errorf("%s=%q: got %v, want nil", tt.name, v, err)
			}
		}
		for _, v := range tt.bad {
			c, err := Load(env(map[string]string{tt.name: v}))
			if err == nil || !strings.HasPrefix(err.Error(), tt.name+": ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s=%q: got %v, want one line naming %s", tt.name, v, err, tt.name)
				continue
			}
			if !reflect.DeepEqual(c, def) {
				t.Errorf("%s=%q: the bad value was assigned: got %+v", tt.name, v, c)
			}
		}
	}
}

// freeText are the settings that take any text; every other refuses
// a value outside its type with one message.
var freeText = map[string]bool{
	"SECKILL_DATA_DIR": true, "SECKILL_REDIS_MASTER": true, "SECKILL_REDIS_USERNAME": true,
	"SECKILL_REDIS_PASSWORD": true, "SECKILL_REDIS_SENTINEL_PASSWORD": true,
	"SECKILL_REDIS_TLS_CA": true, "SECKILL_JWT_SECRET": true,
	"SECKILL_SMS_WEBHOOK_SECRET": true, "SECKILL_SMS_ACCESS_KEY_ID": true, "SECKILL_SMS_ACCESS_KEY_SECRET": true,
	"SECKILL_SMS_APP_ID": true, "SECKILL_SMS_SIGN_NAME": true, "SECKILL_SMS_TEMPLATE": true,
	"SECKILL_ALIPAY_APP_ID": true, "SECKILL_ALIPAY_PRIVATE_KEY_FILE": true, "SECKILL_ALIPAY_PUBLIC_KEY_FILE": true,
	"SECKILL_WECHATPAY_MCH_ID": true, "SECKILL_WECHATPAY_APP_ID": true, "SECKILL_WECHATPAY_SERIAL": true,
	"SECKILL_WECHATPAY_PRIVATE_KEY_FILE": true, "SECKILL_WECHATPAY_APIV3_KEY_FILE": true,
	"SECKILL_WECHATPAY_PUBLIC_KEY_FILE": true, "SECKILL_WECHATPAY_PUBLIC_KEY_ID": true,
}

// TestOneBehaviourOnBadValue: garbage in any typed setting stops Load
// with `NAME: "garbage" is not ...`, whatever the type.
func TestOneBehaviourOnBadValue(t *testing.T) {
	for _, s := range settings {
		if s.b == nil || s.read != nil {
			continue
		}
		_, err := Load(env(map[string]string{s.Name: "bogus!"}))
		refused := err != nil && strings.HasPrefix(err.Error(), s.Name+`: "bogus!" is not `)
		if s.Name == "SECKILL_MYSQL_DSN" {
			refused = err != nil && strings.HasPrefix(err.Error(), s.Name+": malformed")
		}
		if refused == freeText[s.Name] {
			t.Errorf("%s=bogus!: got %v, want refused %v", s.Name, err, !freeText[s.Name])
		}
	}
}

// TestValidateChecksBounds: Validate refuses a hand-built value outside
// its setting's bounds, naming the variable; the defaults pass.
func TestValidateChecksBounds(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate(): %v", err)
	}
	for name, set := range map[string]func(*Config){
		"SECKILL_STOCK_BUCKETS":   func(c *Config) { c.StockBuckets = model.MaxStockBuckets + 1 },
		"SECKILL_CONSUMER_DUTY":   func(c *Config) { c.ConsumerDuty = 0 },
		"SECKILL_CLAIM_IDLE":      func(c *Config) { c.ClaimIdle = time.Second },
		"SECKILL_LOCK_MODE":       func(c *Config) { c.LockMode = "redis" },
		"SECKILL_ZK_ADDRS":        func(c *Config) { c.ZKAddrs = []string{"zk"} },
		"SECKILL_HTTP_ADDR":       func(c *Config) { c.HTTPAddr = "" },
		"SECKILL_REQUEST_TIMEOUT": func(c *Config) { c.RequestTimeout = 0 },
	} {
		c := Default()
		set(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s out of bounds: got %v, want an error naming it", name, err)
		}
	}
}

// TestShortDuration: the docs write durations without trailing zero units.
func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0", time.Minute: "1m", 15 * time.Minute: "15m",
		24 * time.Hour: "24h", 90 * time.Second: "1m30s", 100 * time.Millisecond: "100ms", time.Hour + time.Second: "1h0m1s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v): got %q, want %q", d, got, want)
		}
	}
}
