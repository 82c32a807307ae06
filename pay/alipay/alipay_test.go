package alipay_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/smartwalle/alipay/v3"

	"seckill/model"
	"seckill/pay/alipay"
	"seckill/service/payment"
	"seckill/testkit/testenv"
)

var _ payment.Provider = (*alipay.Provider)(nil)

const appID = "2021000000000042"

// keys are the unit tests' own: the app's, Alipay's (the platform's) and
// a stranger's, made once.
var keys struct {
	once                    sync.Once
	app, platform, stranger *rsa.PrivateKey
}

func testKeys(t *testing.T) {
	keys.once.Do(func() {
		for _, k := range []**rsa.PrivateKey{&keys.app, &keys.platform, &keys.stranger} {
			var err error
			if *k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
				panic(err)
			}
		}
	})
}

func privatePEM(k *rsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func publicPEM(k *rsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

var beijing = time.FixedZone("CST", 8*3600)

// unitProvider is a provider with the test's keys and clock, its gateway
// at gateway ("" = none reached by the test).
func unitProvider(t *testing.T, gateway string, clock *testenv.Clock, hc *http.Client) *alipay.Provider {
	t.Helper()
	testKeys(t)
	p, err := alipay.New(alipay.Config{
		AppID: appID, PrivateKey: privatePEM(keys.app), PublicKey: publicPEM(keys.platform),
		Gateway: gateway, HTTPClient: hc, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sign signs a notification as Alipay does: the sorted key=value pairs
// but sign and sign_type, SHA256withRSA, base64.
func sign(v url.Values, key *rsa.PrivateKey) url.Values {
	var pairs []string
	for k, vs := range v {
		if k != "sign" && k != "sign_type" {
			for _, x := range vs {
				pairs = append(pairs, k+"="+x)
			}
		}
	}
	sort.Strings(pairs)
	sum := sha256.Sum256([]byte(strings.Join(pairs, "&")))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	v.Set("sign", base64.StdEncoding.EncodeToString(sig))
	return v
}

func paidNotice(at time.Time) url.Values {
	return url.Values{
		"notify_time": {at.In(beijing).Format("2006-01-02 15:04:05")}, "notify_type": {"trade_status_sync"},
		"notify_id": {"n1"}, "app_id": {appID}, "charset": {"utf-8"}, "version": {"1.0"}, "sign_type": {"RSA2"},
		"trade_no": {"2026010122001400000000000001"}, "out_trade_no": {"o-1"}, "trade_status": {"TRADE_SUCCESS"},
		"total_amount": {"12.34"}, "gmt_payment": {at.In(beijing).Format("2006-01-02 15:04:05")},
	}
}

// TestVerify: a true notification verifies and parses (amount in fen,
// state, time; a refund's kind and number), and verifies the same when
// it comes twice. Each rejection has its reason: forged (another key),
// altered after signing, unsigned, another app, stale (both ways),
// malformed (form, amount, status, refund without its number).
func TestVerify(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := testenv.NewClock(now)
	p := unitProvider(t, "", clock, nil)
	ctx := context.Background()
	good := []byte(sign(paidNotice(now.Add(-time.Minute)), keys.platform).Encode())
	n, err := p.Verify(ctx, nil, good)
	want := model.PayNotice{Kind: model.NoticeTrade, OutTradeNo: "o-1", ProviderTradeNo: "2026010122001400000000000001",
		Trade: model.TradePaid, Amount: 1234, Currency: "CNY", At: now.Add(-time.Minute)}
	if err != nil || !n.At.Equal(want.At) {
		t.Fatalf("the true notification: %+v %v, want %+v", n, err, want)
	}
	n.At = want.At
	if n != want {
		t.Fatalf("the true notification: %+v, want %+v", n, want)
	}
	again, err := p.Verify(ctx, nil, good)
	again.At = want.At
	if err != nil || again != n {
		t.Errorf("the same notification again: %+v %v, want %+v", again, err, n)
	}

	refund := paidNotice(now)
	refund.Set("out_biz_no", "rf-1")
	refund.Set("refund_fee", "2.00")
	refund.Set("gmt_refund", now.In(beijing).Format("2006-01-02 15:04:05.000"))
	r, err := p.Verify(ctx, nil, []byte(sign(refund, keys.platform).Encode()))
	if err != nil || r.Kind != model.NoticeRefund || r.OutRefundNo != "rf-1" || r.Refund != model.RefundDone || !r.At.Equal(now) {
		t.Errorf("refund notification: %+v %v", r, err)
	}

	cases := map[string]struct {
		body   func() string
		reason string
	}{
		"forged": {func() string { return sign(paidNotice(now), keys.stranger).Encode() }, "signature"},
		"altered": {func() string {
			v := sign(paidNotice(now), keys.platform)
			v.Set("total_amount", "0.01")
			return v.Encode()
		}, "signature"},
		"unsigned": {func() string { return paidNotice(now).Encode() }, "signature"},
		"another app": {func() string {
			v := paidNotice(now)
			v.Set("app_id", "2021000000000999")
			return sign(v, keys.platform).Encode()
		}, "app"},
		"stale":    {func() string { return sign(paidNotice(now.Add(-2*time.Hour)), keys.platform).Encode() }, "stale"},
		"future":   {func() string { return sign(paidNotice(now.Add(2*time.Hour)), keys.platform).Encode() }, "stale"},
		"bad form": {func() string { return "a=%zz" }, "malformed"},
		"amount": {func() string {
			v := paidNotice(now)
			v.Set("total_amount", "12.345")
			return sign(v, keys.platform).Encode()
		}, "malformed"},
		"status": {func() string {
			v := paidNotice(now)
			v.Set("trade_status", "TRADE_MAYBE")
			return sign(v, keys.platform).Encode()
		}, "malformed"},
		"refund without number": {func() string {
			v := paidNotice(now)
			v.Set("refund_fee", "1.00")
			return sign(v, keys.platform).Encode()
		}, "malformed"},
	}
	for name, c := range cases {
		_, err := p.Verify(ctx, nil, []byte(c.body()))
		var rej *model.NoticeRejectedError
		if !errors.As(err, &rej) || rej.Reason != c.reason || !errors.Is(err, model.ErrNoticeRejected) {
			t.Errorf("%s: %v, want rejected for %s", name, err, c.reason)
		}
	}
}

// TestStateMaps: Alipay's trade and refund states in model's terms.
func TestStateMaps(t *testing.T) {
	for s, want := range map[sdk.TradeStatus]model.TradeState{
		"WAIT_BUYER_PAY": model.TradeOpen, "TRADE_SUCCESS": model.TradePaid,
		"TRADE_FINISHED": model.TradePaid, "TRADE_CLOSED": model.TradeClosed,
	} {
		if got, ok := alipay.TradeState(s); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", s, got, ok, want)
		}
	}
	if _, ok := alipay.TradeState("WHATEVER"); ok {
		t.Error("an unknown trade_status is known")
	}
	for _, c := range []struct {
		status, no string
		want       model.RefundState
	}{{"REFUND_SUCCESS", "r", model.RefundDone}, {"", "r", model.RefundProcessing}, {"", "", model.RefundMissing}} {
		if got, err := alipay.RefundState(c.status, c.no, ""); err != nil || got.State != c.want {
			t.Errorf("refund %q %q: %v %v, want %v", c.status, c.no, got.State, err, c.want)
		}
	}
}

// TestUnavailable: a gateway answering 5xx, one not listening and one
// too slow leave the state unknown: model.ErrUnavailable. A refusal in
// Alipay's words (an unsigned error answer) is not.
func TestUnavailable(t *testing.T) {
	clock := testenv.NewClock(time.Now())
	ctx := context.Background()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"alipay_trade_query_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"no"}}`))
	}))
	defer refusing.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/gateway.do"
	ln.Close()
	for name, gw := range map[string]string{"5xx": down.URL, "not listening": closed, "slow": slow.URL} {
		p := unitProvider(t, gw, clock, &http.Client{Timeout: 200 * time.Millisecond})
		if _, err := p.Query(ctx, "o-1"); !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("%s: query: %v, want ErrUnavailable", name, err)
		}
		if _, err := p.Create(ctx, model.TradeRequest{OutTradeNo: "o-1", Amount: 100, Subject: "s"}); !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("%s: create: %v, want ErrUnavailable", name, err)
		}
	}
	p := unitProvider(t, refusing.URL, clock, nil)
	if _, err := p.Query(ctx, "o-1"); err == nil || errors.Is(err, model.ErrUnavailable) || !strings.Contains(err.Error(), "isv.invalid-signature") {
		t.Errorf("refused: %v, want an error naming the sub_code, not ErrUnavailable", err)
	}
}

// TestNewRefusesBadKeys: keys that do not parse fail at New.
func TestNewRefusesBadKeys(t *testing.T) {
	testKeys(t)
	for name, cfg := range map[string]alipay.Config{
		"no app":         {PrivateKey: privatePEM(keys.app), PublicKey: publicPEM(keys.platform)},
		"bad private":    {AppID: appID, PrivateKey: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), PublicKey: publicPEM(keys.platform)},
		"public swapped": {AppID: appID, PrivateKey: privatePEM(keys.app), PublicKey: privatePEM(keys.platform)},
	} {
		if _, err := alipay.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
