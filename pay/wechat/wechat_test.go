package wechat

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"seckill/model"
	"seckill/service/payment"
)

var _ payment.Provider = (*Provider)(nil)

func TestTradeState(t *testing.T) {
	for s, want := range map[string]model.TradeState{
		"NOTPAY": model.TradeOpen, "USERPAYING": model.TradeOpen,
		"SUCCESS": model.TradePaid, "REFUND": model.TradePaid,
		"CLOSED": model.TradeClosed, "REVOKED": model.TradeClosed, "PAYERROR": model.TradeClosed,
	} {
		if got, ok := tradeState(s); !ok || got != want {
			t.Errorf("tradeState(%s) = %s, %v; want %s", s, got, ok, want)
		}
	}
	if _, ok := tradeState("PAID"); ok {
		t.Error("tradeState(PAID) is known; want unknown")
	}
}

func TestRefundState(t *testing.T) {
	for s, want := range map[string]model.RefundState{
		"SUCCESS": model.RefundDone, "PROCESSING": model.RefundProcessing,
		"ABNORMAL": model.RefundFailed, "CLOSED": model.RefundFailed,
	} {
		if got, ok := refundState(s); !ok || got != want {
			t.Errorf("refundState(%s) = %s, %v; want %s", s, got, ok, want)
		}
	}
	if _, ok := refundState("DONE"); ok {
		t.Error("refundState(DONE) is known; want unknown")
	}
}

// TestDescription: the subject, or the order's number when there is none,
// cut to 127 bytes without splitting a character.
func TestDescription(t *testing.T) {
	if got := description(model.TradeRequest{OrderID: 7}); got != "order 7" {
		t.Errorf("no subject: %q", got)
	}
	long := strings.Repeat("€", 50) // 150 bytes
	got := description(model.TradeRequest{Subject: long})
	if len(got) != 126 || !utf8.ValidString(got) {
		t.Errorf("a long subject: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

func TestNewRefusesConfig(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"no mchid":          func(c *Config) { c.MchID = "" },
		"no public key ID":  func(c *Config) { c.PublicKeyID = "" },
		"short APIv3 key":   func(c *Config) { c.APIv3Key = c.APIv3Key[:31] },
		"no private key":    func(c *Config) { c.PrivateKey = nil },
		"public as private": func(c *Config) { c.PrivateKey = c.PublicKey },
		"no public key":     func(c *Config) { c.PublicKey = nil },
		"base URL no host":  func(c *Config) { c.BaseURL = "http:///wechat" },
		"base URL ftp":      func(c *Config) { c.BaseURL = "ftp://127.0.0.1/wechat" },
	} {
		cfg := testConfig(t)
		edit(&cfg)
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("%s: New succeeded; want an error", name)
		}
	}
}

// recorder answers 204 and keeps the request it was sent.
type recorder struct{ got *http.Request }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// TestRewrite: the SDK's requests go to the base URL's scheme and host,
// below its path, with the query and the signed headers as they were; the
// SDK's request itself is left alone; other hosts pass as they are.
func TestRewrite(t *testing.T) {
	rec := &recorder{}
	hc, err := httpClient("http://127.0.0.1:9/wechat/", &http.Client{Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://api.mch.weixin.qq.com/v3/pay/transactions/out-trade-no/A%2FB?mchid=1900000001", nil)
	req.Header.Set("Authorization", "WECHATPAY2-SHA256-RSA2048 x")
	if _, err := hc.Do(req); err != nil {
		t.Fatal(err)
	}
	got := rec.got
	if u := got.URL.String(); u != "http://127.0.0.1:9/wechat/v3/pay/transactions/out-trade-no/A%2FB?mchid=1900000001" {
		t.Errorf("sent to %s", u)
	}
	if got.Header.Get("Authorization") != "WECHATPAY2-SHA256-RSA2048 x" {
		t.Errorf("Authorization = %q", got.Header.Get("Authorization"))
	}
	if req.URL.Host != sdkHost || req.URL.Scheme != "https" {
		t.Errorf("the SDK's request was changed: %s", req.URL)
	}

	other, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8/x?y=1", nil)
	if _, err := hc.Do(other); err != nil {
		t.Fatal(err)
	}
	if rec.got.URL.String() != "http://127.0.0.1:8/x?y=1" {
		t.Errorf("another host's request sent to %s", rec.got.URL)
	}
}

var authRE = regexp.MustCompile(`^WECHATPAY2-SHA256-RSA2048 mchid="([^"]*)",nonce_str="([^"]*)",timestamp="(\d+)",serial_no="([^"]*)",signature="([^"]*)"$`)

// stub is a WeChat Pay stand-in for one answer: it checks the merchant's
// signature over the path the SDK signed (the path below /wechat) and
// answers status and body, signed by key.
func stub(t *testing.T, status int, body string, key *rsa.PrivateKey) *httptest.Server {
	k := keys(t)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
		signed, ok := strings.CutPrefix(r.URL.RequestURI(), "/wechat")
		if m == nil || !ok || m[1] != testMchID || m[4] != "MERCHANT_SERIAL_01" {
			t.Errorf("request %s with Authorization %q", r.URL, r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		digest := sha256.Sum256([]byte(fmt.Sprintf("%s\n%s\n%s\n%s\n%s\n", r.Method, signed, m[3], m[2], in)))
		sig, _ := base64.StdEncoding.DecodeString(m[5])
		if err := rsa.VerifyPKCS1v15(&k.merchant.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
			t.Errorf("request %s: the merchant's signature over %s: %v", r.URL, signed, err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		ts, nonce := fmt.Sprint(time.Now().Unix()), randomText(t, 16)
		d := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + body + "\n"))
		s, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
		w.Header().Set("Wechatpay-Timestamp", ts)
		w.Header().Set("Wechatpay-Nonce", nonce)
		w.Header().Set("Wechatpay-Serial", testKeyID)
		w.Header().Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(s))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
}

func stubProvider(t *testing.T, srv *httptest.Server) *Provider {
	cfg := testConfig(t)
	cfg.BaseURL = srv.URL + "/wechat"
	cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	return newTestProvider(t, cfg)
}

// TestAnswers: through the rewrite, the SDK's signed request reaches the
// base URL and its answers are read: a trade, ORDER_NOT_EXIST (missing),
// a 503 and a closed port (unavailable), an answer signed by another key
// (an error, not unavailable), a business refusal (an error naming it).
func TestAnswers(t *testing.T) {
	k := keys(t)
	ctx := context.Background()
	paid := `{"appid":"` + testAppID + `","mchid":"` + testMchID + `","out_trade_no":"T1","transaction_id":"42001",` +
		`"trade_state":"SUCCESS","success_time":"2026-01-01T12:00:00+08:00","amount":{"total":1234,"currency":"CNY"}}`

	srv := stub(t, http.StatusOK, paid, k.platform)
	st, err := stubProvider(t, srv).Query(ctx, "T1")
	srv.Close()
	if err != nil || st.State != model.TradePaid || st.Amount != 1234 || st.ProviderTradeNo != "42001" ||
		!st.PaidAt.Equal(time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("Query = %+v, %v; want paid 1234 by 42001", st, err)
	}

	srv = stub(t, http.StatusNotFound, `{"code":"ORDER_NOT_EXIST","message":"no such order"}`, k.platform)
	st, err = stubProvider(t, srv).Query(ctx, "T1")
	if err != nil || st.State != model.TradeMissing {
		t.Errorf("Query of ORDER_NOT_EXIST = %+v, %v; want missing", st, err)
	}
	if err := stubProvider(t, srv).Close(ctx, "T1"); err != nil {
		t.Errorf("Close of ORDER_NOT_EXIST = %v, want nil", err)
	}
	srv.Close()

	srv = stub(t, http.StatusServiceUnavailable, `{"code":"SYSTEM_ERROR","message":"busy"}`, k.platform)
	_, err = stubProvider(t, srv).Query(ctx, "T1")
	srv.Close()
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Query of a 503 = %v, want ErrUnavailable", err)
	}
	_, err = stubProvider(t, srv).Query(ctx, "T1") // closed: connection refused
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Query of a closed port = %v, want ErrUnavailable", err)
	}

	srv = stub(t, http.StatusOK, paid, k.other)
	_, err = stubProvider(t, srv).Query(ctx, "T1")
	srv.Close()
	if err == nil || errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Query answered under another key = %v, want a plain error", err)
	}

	srv = stub(t, http.StatusForbidden, `{"code":"ORDERPAID","message":"paid already"}`, k.platform)
	err = stubProvider(t, srv).Close(ctx, "T1")
	srv.Close()
	if err == nil || errors.Is(err, model.ErrUnavailable) || !strings.Contains(err.Error(), "ORDERPAID") {
		t.Errorf("Close of a paid trade = %v, want an error naming ORDERPAID", err)
	}
}
