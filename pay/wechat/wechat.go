// Package wechat is WeChat Pay (API v3, Native pay) behind payment.Provider,
// through the official SDK wechatpay-go in public-key mode: requests are
// signed with the merchant's key, answers and notifications verified with
// the WeChat Pay public key and its ID.
package wechat

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wechatpay-apiv3/wechatpay-go/core"
	"github.com/wechatpay-apiv3/wechatpay-go/core/auth/validators"
	"github.com/wechatpay-apiv3/wechatpay-go/core/auth/verifiers"
	"github.com/wechatpay-apiv3/wechatpay-go/core/notify"
	"github.com/wechatpay-apiv3/wechatpay-go/core/option"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments/native"
	"github.com/wechatpay-apiv3/wechatpay-go/services/refunddomestic"
	"github.com/wechatpay-apiv3/wechatpay-go/utils"

	"seckill/model"
)

// sdkHost is the host the SDK's request URLs name (its constant base URL).
const sdkHost = "api.mch.weixin.qq.com"

// Config is a merchant's WeChat Pay account in public-key mode.
type Config struct {
	MchID, AppID string
	// Serial is the serial number of the merchant's API certificate.
	Serial string
	// PrivateKey is the merchant's RSA private key (PEM, PKCS #8 or #1).
	PrivateKey []byte
	// APIv3Key decrypts notifications' resources: 32 bytes.
	APIv3Key []byte
	// PublicKey is WeChat Pay's public key (PEM) and PublicKeyID its ID,
	// the serial WeChat Pay's signatures name.
	PublicKey   []byte
	PublicKeyID string
	// BaseURL is where the API is, "" for https://api.mch.weixin.qq.com.
	BaseURL    string
	HTTPClient *http.Client
	// Now is the clock notifications' timestamps are checked against. The
	// SDK checks them against time.Now too, so it must stay near it.
	Now func() time.Time
}

// Provider is WeChat Pay.
type Provider struct {
	cfg       Config
	native    native.NativeApiService
	refunds   refunddomestic.RefundsApiService
	validator *validators.WechatPayNotifyValidator
	notify    *notify.Handler
	now       func() time.Time
}

// New checks cfg and builds the SDK's client. It makes no call.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	for name, v := range map[string]string{"MchID": cfg.MchID, "AppID": cfg.AppID, "Serial": cfg.Serial, "PublicKeyID": cfg.PublicKeyID} {
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("wechat: %s is empty", name)
		}
	}
	if len(cfg.APIv3Key) != 32 {
		return nil, fmt.Errorf("wechat: the APIv3 key has %d bytes, want 32", len(cfg.APIv3Key))
	}
	priv, err := privateKey(cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("wechat: the merchant's private key: %w", err)
	}
	pub, err := utils.LoadPublicKey(string(cfg.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("wechat: WeChat Pay's public key: %w", err)
	}
	hc, err := httpClient(cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	client, err := core.NewClient(ctx,
		option.WithWechatPayPublicKeyAuthCipher(cfg.MchID, cfg.Serial, priv, cfg.PublicKeyID, pub),
		option.WithHTTPClient(hc),
	)
	if err != nil {
		return nil, fmt.Errorf("wechat: %w", err)
	}
	verifier := verifiers.NewSHA256WithRSAPubkeyVerifier(cfg.PublicKeyID, *pub)
	handler, err := notify.NewRSANotifyHandler(string(cfg.APIv3Key), verifier)
	if err != nil {
		return nil, fmt.Errorf("wechat: the notify handler: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{
		cfg:       cfg,
		native:    native.NativeApiService{Client: client},
		refunds:   refunddomestic.RefundsApiService{Client: client},
		validator: validators.NewWechatPayNotifyValidator(verifier),
		notify:    handler,
		now:       now,
	}, nil
}

// Name is model.ProviderWechat.
func (p *Provider) Name() string { return model.ProviderWechat }

// privateKey reads the merchant's key: PKCS #8 as WeChat Pay issues it,
// or PKCS #1.
func privateKey(p []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(p)
	if block != nil && block.Type == "RSA PRIVATE KEY" {
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	}
	return utils.LoadPrivateKey(string(p))
}

// httpClient is the client the SDK sends through: base's copy (or one
// with the SDK's 30 s timeout) whose transport sends the SDK's requests to
// baseURL instead of its constant host.
func httpClient(baseURL string, base *http.Client) (*http.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if base != nil {
		c := *base
		hc = &c
	}
	if baseURL == "" {
		return hc, nil
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("wechat: base URL %q: want http(s)://host[/path]", baseURL)
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &rewrite{base: u, next: next}
	return hc, nil
}

// rewrite sends requests for the SDK's host to base: its scheme and host,
// and its path before the request's. The SDK signs the request's path and
// query, which the receiver sees after base's path.
type rewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (r *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != sdkHost {
		return r.next.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	u := *req.URL
	u.Scheme, u.Host = r.base.Scheme, r.base.Host
	prefix := strings.TrimSuffix(r.base.Path, "/")
	u.Path = prefix + req.URL.Path
	if req.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(r.base.EscapedPath(), "/") + req.URL.RawPath
	}
	out.URL, out.Host = &u, ""
	return r.next.RoundTrip(out)
}

// apiError sorts the SDK's error: an answer in WeChat Pay's words is
// *core.APIError (a 5xx or 429 of it leaves the state unknown); a call that
// got no answer is unavailable; an answer that fails its signature is a
// plain error.
func apiError(op string, err error) error {
	var ae *core.APIError
	if errors.As(err, &ae) {
		if ae.StatusCode >= 500 || ae.StatusCode == http.StatusTooManyRequests {
			return model.Unavailable(fmt.Errorf("wechat %s: HTTP %d %s: %s", op, ae.StatusCode, ae.Code, ae.Message))
		}
		return fmt.Errorf("wechat %s: HTTP %d %s: %s", op, ae.StatusCode, ae.Code, ae.Message)
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return model.Unavailable(fmt.Errorf("wechat %s: %w", op, err))
	}
	return fmt.Errorf("wechat %s: %w", op, err)
}

// codeOf is WeChat Pay's error code in err, "" if it is none of its answers.
func codeOf(err error) string {
	var ae *core.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
