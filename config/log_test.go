package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

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
			name: "SMS secrets",
			env: map[string]string{
				"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "https://sms.example/codes",
				"SECKILL_SMS_WEBHOOK_SECRET": "webhook-secret-0123456789abcdef-xyz", "SECKILL_SMS_ACCESS_KEY_SECRET": "tencent-key-pa55",
			},
			wantIn:  []string{`"sms_sender":"webhook"`, `"sms_webhook_secret":"***"`, `"sms_access_key_secret":"***"`, `"sms_webhook_url":"https://sms.example/codes"`},
			wantNot: []string{"webhook-secret-0123456789", "tencent-key-pa55"},
		},
		{
			name: "SMS URLs' userinfo and query values",
			env: map[string]string{
				"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_SECRET": "webhook-secret-0123456789abcdef-xyz",
				"SECKILL_SMS_WEBHOOK_URL": "https://gwuser:gwpass@gw.example/send?apikey=SECRETKEY&sig=SECRETSIG",
				"SECKILL_SMS_ENDPOINT":    "https://tcuser:tcpass@sms.example/?token=SECRETTOKEN",
			},
			wantIn:  []string{`"sms_webhook_url":"https://***@gw.example/send?apikey=***&sig=***"`, `"sms_endpoint":"https://***@sms.example/?token=***"`},
			wantNot: []string{"gwuser", "gwpass", "SECRETKEY", "SECRETSIG", "tcuser", "tcpass", "SECRETTOKEN"},
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
