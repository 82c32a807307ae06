package config

import (
	"strings"
	"testing"
)

// TestPaySafeByDefault: development pays with the simulated provider when
// nothing is set; production refuses the simulated payment and no provider
// at all, in one line naming the variable; a real provider needs its keys
// and the notify URL, and production refuses them over http.
func TestPaySafeByDefault(t *testing.T) {
	dev, err := Load(env(map[string]string{"SECKILL_ENV": "development"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := dev.Providers(); len(got) != 1 || got[0] != PaySimulated || dev.CheckPay() != nil {
		t.Fatalf("development: providers %v, check %v; want [simulated], nil", got, dev.CheckPay())
	}
	for _, providers := range []string{"", "simulated", "simulated,alipay"} {
		c := Default()
		c.Env = EnvProduction
		c.PayProviders = nil
		if providers != "" {
			c.PayProviders = strings.Split(providers, ",")
		}
		err := c.CheckPay()
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_PAY_PROVIDERS: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("production with %q: %v, want one line naming SECKILL_PAY_PROVIDERS", providers, err)
		}
	}
	c := Default()
	c.Env = EnvProduction
	c.PayProviders = []string{PayAlipay, PayWechat}
	if err := c.CheckPay(); err != nil {
		t.Errorf("production with alipay,wechat: %v", err)
	}
	_, err = Load(env(map[string]string{"SECKILL_ENV": "development", "SECKILL_PAY_PROVIDERS": "alipay,wechat"}))
	for _, v := range []string{"SECKILL_PAY_NOTIFY_BASE_URL", "SECKILL_ALIPAY_APP_ID", "SECKILL_ALIPAY_PRIVATE_KEY_FILE",
		"SECKILL_WECHATPAY_MCH_ID", "SECKILL_WECHATPAY_APIV3_KEY_FILE", "SECKILL_WECHATPAY_PUBLIC_KEY_ID"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("alipay,wechat without settings: %v, want it to name %s", err, v)
		}
	}
	if _, err := Load(env(map[string]string{"SECKILL_PAY_PROVIDERS": "paypal"})); err == nil || !strings.HasPrefix(err.Error(), "SECKILL_PAY_PROVIDERS") {
		t.Errorf("paypal: %v, want refused", err)
	}
	c = Default()
	c.Env = EnvProduction
	c.PayProviders = []string{PayAlipay}
	c.AlipayAppID, c.AlipayPrivateKeyFile, c.AlipayPublicKeyFile = "2021", "app.pem", "alipay.pem"
	c.PayNotifyBaseURL, c.AlipayGateway = "https://shop.example/", "http://127.0.0.1:9/gateway.do"
	if errs := payRules(&c); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "SECKILL_ALIPAY_GATEWAY: http://") {
		t.Errorf("production alipay over http: %v", errs)
	}
}
