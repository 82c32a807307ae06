package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"seckill/config"
	"seckill/observe/metrics"
	"seckill/pay/alipay"
	"seckill/pay/wechat"
	"seckill/repository/sqlstore"
	"seckill/service/payment"
)

// payProviderTimeout bounds one call to a pay provider.
const payProviderTimeout = 10 * time.Second

// payments are the real pay providers of SECKILL_PAY_PROVIDERS behind the
// payment service; nil when only the simulated payment is enabled. Keys
// are read from their files here and never logged.
func (w *wiring) payments(ctx context.Context, p purchase) (*payment.Payments, error) {
	providers, err := payProviders(ctx, w.cfg)
	if err != nil || len(providers) == 0 {
		return nil, err
	}
	return payment.New(payment.Deps{
		Store: sqlstore.NewTrades(w.d.DB), Providers: providers, Orders: p.seckill, Now: time.Now, Log: w.log,
		Metrics: metrics.Payments{Metrics: w.m},
	}, payment.Config{PayTimeout: w.cfg.PayTimeout, NotifyBaseURL: w.cfg.PayNotifyBaseURL, Bound: w.cfg.PayUnreachableGrace}), nil
}

// payProviders are the real pay providers of SECKILL_PAY_PROVIDERS (none
// when only the simulated payment is enabled).
func payProviders(ctx context.Context, cfg config.Config) ([]payment.Provider, error) {
	client := &http.Client{Timeout: payProviderTimeout}
	var providers []payment.Provider
	if cfg.HasProvider(config.PayAlipay) {
		priv, pub, err := readKeys("SECKILL_ALIPAY_PRIVATE_KEY_FILE", cfg.AlipayPrivateKeyFile, "SECKILL_ALIPAY_PUBLIC_KEY_FILE", cfg.AlipayPublicKeyFile)
		if err != nil {
			return nil, err
		}
		pr, err := alipay.New(alipay.Config{AppID: cfg.AlipayAppID, PrivateKey: priv, PublicKey: pub, Gateway: cfg.AlipayGateway, HTTPClient: client})
		if err != nil {
			return nil, fmt.Errorf("SECKILL_PAY_PROVIDERS=alipay: %w", err)
		}
		providers = append(providers, pr)
	}
	if cfg.HasProvider(config.PayWechat) {
		priv, pub, err := readKeys("SECKILL_WECHATPAY_PRIVATE_KEY_FILE", cfg.WechatPrivateKeyFile, "SECKILL_WECHATPAY_PUBLIC_KEY_FILE", cfg.WechatPublicKeyFile)
		if err != nil {
			return nil, err
		}
		v3, err := os.ReadFile(cfg.WechatAPIv3KeyFile)
		if err != nil {
			return nil, fmt.Errorf("SECKILL_WECHATPAY_APIV3_KEY_FILE: %w", err)
		}
		pr, err := wechat.New(ctx, wechat.Config{
			MchID: cfg.WechatMchID, AppID: cfg.WechatAppID, Serial: cfg.WechatSerial, PrivateKey: priv,
			APIv3Key: []byte(strings.TrimSpace(string(v3))), PublicKey: pub, PublicKeyID: cfg.WechatPublicKeyID,
			BaseURL: cfg.WechatBaseURL, HTTPClient: client,
		})
		if err != nil {
			return nil, fmt.Errorf("SECKILL_PAY_PROVIDERS=wechat: %w", err)
		}
		providers = append(providers, pr)
	}
	return providers, nil
}

// readKeys reads two key files; the errors name the variable, never the
// file's content.
func readKeys(privVar, privFile, pubVar, pubFile string) (priv, pub []byte, err error) {
	if priv, err = os.ReadFile(privFile); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", privVar, err)
	}
	if pub, err = os.ReadFile(pubFile); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pubVar, err)
	}
	return priv, pub, nil
}

// paySweeper settles the trades past their deadline at the providers and
// retries the refunds owed. Every instance runs one; the providers' answers
// are applied once by the database's conditional updates.
type paySweeper struct{ loop }

func newPaySweeper(p *payment.Payments) *paySweeper { return &paySweeper{loop{run: p.Run}} }

// Name is "pay sweeper".
func (*paySweeper) Name() string { return "pay sweeper" }
