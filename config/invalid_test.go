package config

import (
	"strings"
	"testing"
)

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
		{"automatic rebuild garbage", map[string]string{"SECKILL_AUTO_REBUILD": "later"}, "SECKILL_AUTO_REBUILD"},
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

// TestProductionRefusesWeakStarts: production refuses a JWT secret under
// 32 bytes, the public development secret and an embedded backend. Each
// refusal is one line naming the variable.
func TestProductionRefusesWeakStarts(t *testing.T) {
	real := func(more map[string]string) map[string]string {
		return merged(map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret}, more)
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
		{"Tencent over http", real(tencentOver("http://sms.example")), "SECKILL_SMS_ENDPOINT"},
		{"Tencent over HTTP", real(tencentOver("HTTP://sms.example")), "SECKILL_SMS_ENDPOINT"},
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
	for _, endpoint := range []string{"", "https://sms.example"} {
		if _, err := Load(env(real(tencentOver(endpoint)))); err != nil {
			t.Errorf("Tencent at %q in production: got %v, want nil", endpoint, err)
		}
	}
	if _, err := Load(env(real(merged(tencentOver("http://127.0.0.1:9"), map[string]string{"SECKILL_ENV": "development"})))); err != nil {
		t.Errorf("Tencent over http in development (a local fake): got %v, want nil", err)
	}
}

// tencentOver is a complete Tencent sender whose API is at endpoint.
func tencentOver(endpoint string) map[string]string {
	return map[string]string{"SECKILL_SMS_SENDER": "tencent", "SECKILL_SMS_ACCESS_KEY_ID": "AKID", "SECKILL_SMS_ACCESS_KEY_SECRET": "key",
		"SECKILL_SMS_APP_ID": "1400000000", "SECKILL_SMS_SIGN_NAME": "Shop", "SECKILL_SMS_TEMPLATE": "100", "SECKILL_SMS_ENDPOINT": endpoint}
}
