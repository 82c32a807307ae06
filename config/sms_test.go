package config

import (
	"strings"
	"testing"
)

// TestSenderRules: each sender's settings are checked, one line naming
// the variable; aliyun is refused in words.
func TestSenderRules(t *testing.T) {
	secret := strings.Repeat("w", 32)
	tencent := func(drop string) map[string]string {
		m := map[string]string{"SECKILL_SMS_SENDER": "tencent", "SECKILL_SMS_ACCESS_KEY_ID": "AKID", "SECKILL_SMS_ACCESS_KEY_SECRET": "key",
			"SECKILL_SMS_APP_ID": "1400000000", "SECKILL_SMS_SIGN_NAME": "Shop", "SECKILL_SMS_TEMPLATE": "100"}
		delete(m, drop)
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string // "" accepted
	}{
		{"unknown sender", map[string]string{"SECKILL_SMS_SENDER": "sms"}, "SECKILL_SMS_SENDER"},
		{"webhook without URL", map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_SECRET": secret}, "SECKILL_SMS_WEBHOOK_URL"},
		{"webhook without secret", map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "http://127.0.0.1:9/sms"}, "SECKILL_SMS_WEBHOOK_SECRET"},
		{"webhook 31-byte secret", map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "http://127.0.0.1:9/sms", "SECKILL_SMS_WEBHOOK_SECRET": secret[:31]}, "SECKILL_SMS_WEBHOOK_SECRET"},
		{"webhook URL not http", map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "ftp://x/sms", "SECKILL_SMS_WEBHOOK_SECRET": secret}, "SECKILL_SMS_WEBHOOK_URL"},
		{"webhook", map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "https://sms.example/codes", "SECKILL_SMS_WEBHOOK_SECRET": secret}, ""},
		{"tencent", tencent(""), ""},
		{"tencent without key id", tencent("SECKILL_SMS_ACCESS_KEY_ID"), "SECKILL_SMS_ACCESS_KEY_ID"},
		{"tencent without key secret", tencent("SECKILL_SMS_ACCESS_KEY_SECRET"), "SECKILL_SMS_ACCESS_KEY_SECRET"},
		{"tencent without app", tencent("SECKILL_SMS_APP_ID"), "SECKILL_SMS_APP_ID"},
		{"tencent without sign name", tencent("SECKILL_SMS_SIGN_NAME"), "SECKILL_SMS_SIGN_NAME"},
		{"tencent without template", tencent("SECKILL_SMS_TEMPLATE"), "SECKILL_SMS_TEMPLATE"},
		{"aliyun", map[string]string{"SECKILL_SMS_SENDER": "aliyun"}, "SECKILL_SMS_SENDER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(tt.env))
			switch {
			case tt.wantVar == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.wantVar != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantVar+":") || strings.Contains(err.Error(), "\n")):
				t.Errorf("got %v, want one line starting with %s:", err, tt.wantVar)
			}
		})
	}
}

// TestURLRefusalHidesSecrets: a refused sender URL is named masked in the
// start-up error, never with its userinfo or query values.
func TestURLRefusalHidesSecrets(t *testing.T) {
	tests := []struct {
		name, variable, url string
	}{
		{"webhook not http", "SECKILL_SMS_WEBHOOK_URL", "ftp://gwuser:gwpass@gw.example/send?apikey=SECRETKEY"},
		{"webhook without host", "SECKILL_SMS_WEBHOOK_URL", "https:gwuser:gwpass@gw.example/send?apikey=SECRETKEY"},
		{"webhook unparseable", "SECKILL_SMS_WEBHOOK_URL", "https://gwuser:gwpass@gw.example:port/send?apikey=SECRETKEY"},
		{"endpoint not http", "SECKILL_SMS_ENDPOINT", "ftp://gwuser:gwpass@sms.example/?apikey=SECRETKEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{tt.variable: tt.url}))
			if err == nil || !strings.HasPrefix(err.Error(), tt.variable+":") {
				t.Fatalf("got %v, want one line starting with %s:", err, tt.variable)
			}
			for _, s := range []string{"gwuser", "gwpass", "SECRETKEY"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q: leaks %q", err, s)
				}
			}
		})
	}
}

// TestProductionNeedsSender: serve in production refuses no sender and
// the log in one line naming SECKILL_SMS_SENDER; development keeps the log.
func TestProductionNeedsSender(t *testing.T) {
	prod := map[string]string{"SECKILL_MYSQL_DSN": realDSN, "SECKILL_REDIS_ADDR": realRedis, "SECKILL_JWT_SECRET": testSecret}
	with := func(more map[string]string) map[string]string { return merged(prod, more) }
	for name, vars := range map[string]map[string]string{
		"no sender": prod,
		"log":       with(map[string]string{"SECKILL_SMS_SENDER": "log"}),
	} {
		c, err := Load(env(vars))
		if err != nil {
			t.Fatalf("%s: Load: %v", name, err)
		}
		err = c.CheckSender()
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_SMS_SENDER: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s in production: got %v, want one line naming SECKILL_SMS_SENDER", name, err)
		}
	}
	c, err := Load(env(with(map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "https://sms.example/codes",
		"SECKILL_SMS_WEBHOOK_SECRET": strings.Repeat("w", 32)})))
	if err != nil || c.CheckSender() != nil {
		t.Errorf("webhook in production: got %v, %v, want nil", err, c.CheckSender())
	}
	c, err = Load(env(with(map[string]string{"SECKILL_ENV": "development"})))
	if err != nil || c.CheckSender() != nil || c.Sender() != SenderLog {
		t.Errorf("development without sender: got %v, %v, %q, want nil, nil, log", err, c.CheckSender(), c.Sender())
	}
}
