package config

import (
	"errors"
	"fmt"
	"slices"
)

// Pay providers (SECKILL_PAY_PROVIDERS).
const (
	PaySimulated = "simulated"
	PayAlipay    = "alipay"
	PayWechat    = "wechat"
)

func validProvider(s string) bool { return s == PaySimulated || s == PayAlipay || s == PayWechat }

// Providers is SECKILL_PAY_PROVIDERS; simulated when unset in development.
func (c *Config) Providers() []string {
	if len(c.PayProviders) == 0 && c.Env != EnvProduction {
		return []string{PaySimulated}
	}
	return c.PayProviders
}

// HasProvider reports whether the provider is enabled.
func (c *Config) HasProvider(name string) bool { return slices.Contains(c.Providers(), name) }

// payRules: what each provider needs.
func payRules(c *Config) []error {
	var errs []error
	real := c.HasProvider(PayAlipay) || c.HasProvider(PayWechat)
	if real && c.PayNotifyBaseURL == "" {
		errs = append(errs, errors.New("SECKILL_PAY_NOTIFY_BASE_URL: required with alipay or wechat (the public URL the providers post their notifications to; only a notification pays an order)"))
	}
	need := func(provider string, vars ...[2]string) {
		for _, v := range vars {
			if v[1] == "" {
				errs = append(errs, fmt.Errorf("%s: required with SECKILL_PAY_PROVIDERS=%s", v[0], provider))
			}
		}
	}
	if c.HasProvider(PayAlipay) {
		need(PayAlipay, [2]string{"SECKILL_ALIPAY_APP_ID", c.AlipayAppID},
			[2]string{"SECKILL_ALIPAY_PRIVATE_KEY_FILE", c.AlipayPrivateKeyFile},
			[2]string{"SECKILL_ALIPAY_PUBLIC_KEY_FILE", c.AlipayPublicKeyFile})
	}
	if c.HasProvider(PayWechat) {
		need(PayWechat, [2]string{"SECKILL_WECHATPAY_MCH_ID", c.WechatMchID},
			[2]string{"SECKILL_WECHATPAY_APP_ID", c.WechatAppID},
			[2]string{"SECKILL_WECHATPAY_SERIAL", c.WechatSerial},
			[2]string{"SECKILL_WECHATPAY_PRIVATE_KEY_FILE", c.WechatPrivateKeyFile},
			[2]string{"SECKILL_WECHATPAY_APIV3_KEY_FILE", c.WechatAPIv3KeyFile},
			[2]string{"SECKILL_WECHATPAY_PUBLIC_KEY_FILE", c.WechatPublicKeyFile},
			[2]string{"SECKILL_WECHATPAY_PUBLIC_KEY_ID", c.WechatPublicKeyID})
	}
	if c.Env != EnvProduction {
		return errs
	}
	for _, v := range [][2]string{{"SECKILL_ALIPAY_GATEWAY", c.AlipayGateway}, {"SECKILL_WECHATPAY_BASE_URL", c.WechatBaseURL}, {"SECKILL_PAY_NOTIFY_BASE_URL", c.PayNotifyBaseURL}} {
		if plainHTTP(v[1]) {
			errs = append(errs, fmt.Errorf("%s: http:// is not allowed in production (payments would travel in clear text); use https://; SECKILL_ENV=development allows http:// (a local fake)", v[0]))
		}
	}
	return errs
}

// CheckPay refuses to serve in production without a real pay provider:
// the simulated payment takes no money. Only serve calls it.
func (c *Config) CheckPay() error {
	if c.Env != EnvProduction {
		return nil
	}
	if c.HasProvider(PaySimulated) {
		return errors.New("SECKILL_PAY_PROVIDERS: simulated is development only (it pays an order without taking money); production needs alipay, wechat or both")
	}
	if len(c.Providers()) == 0 {
		return errors.New("SECKILL_PAY_PROVIDERS: required in production (alipay, wechat or both: the providers that take the buyers' money)")
	}
	return nil
}
