package fakepay

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wechatpay-apiv3/wechatpay-go/core"
	"github.com/wechatpay-apiv3/wechatpay-go/core/option"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments/native"
	"github.com/wechatpay-apiv3/wechatpay-go/services/refunddomestic"
)

// toFake sends the SDK's requests (to its constant host) to the fake's
// /wechat, as the adapter does; edit, when set, changes the request after
// the SDK signed it.
type toFake struct {
	base string
	edit func(*http.Request)
}

func (f toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	u, _ := url.Parse(f.base + r.URL.RequestURI())
	out.URL, out.Host = u, ""
	if f.edit != nil {
		f.edit(out)
	}
	return http.DefaultTransport.RoundTrip(out)
}

func startWechat(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	s, err := Start(ctx, Options{KeyDir: keyDir, EnvFile: dir + "/fakepay.env"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = s.Close() })
	return s
}

// sdkClient is the SDK in public-key mode, as the service builds it:
// signing with key as serial, trusting pub under keyID.
func wxSDK(t *testing.T, s *Server, key *rsa.PrivateKey, serial, keyID string, pub *rsa.PublicKey, edit func(*http.Request)) *core.Client {
	return wxSDKOf(t, s, WechatMchID, key, serial, keyID, pub, edit)
}

func wxSDKOf(t *testing.T, s *Server, mchID string, key *rsa.PrivateKey, serial, keyID string, pub *rsa.PublicKey, edit func(*http.Request)) *core.Client {
	t.Helper()
	c, err := core.NewClient(context.Background(),
		option.WithWechatPayPublicKeyAuthCipher(mchID, serial, key, keyID, pub),
		option.WithHTTPClient(&http.Client{Timeout: 5 * time.Second, Transport: toFake{base: s.URL() + "/wechat", edit: edit}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func merchantClient(t *testing.T, s *Server) *core.Client {
	k := s.Core().Keys
	return wxSDK(t, s, k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, &k.WechatPlatform.PublicKey, nil)
}

func prepay(no string, total int64, notifyURL string) native.PrepayRequest {
	return native.PrepayRequest{
		Appid: core.String(WechatAppID), Mchid: core.String(WechatMchID), Description: core.String("voucher " + no),
		OutTradeNo: core.String(no), NotifyUrl: core.String(notifyURL), TimeExpire: core.Time(time.Now().Add(15 * time.Minute)),
		Amount: &native.Amount{Total: core.Int64(total), Currency: core.String("CNY")},
	}
}

func wantAPIError(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var ae *core.APIError
	if !errors.As(err, &ae) || ae.StatusCode != status || ae.Code != code {
		t.Fatalf("%s: %v; want HTTP %d %s", what, err, status, code)
	}
}

func wxControl(t *testing.T, s *Server, method, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d, %v %v", method, path, resp.StatusCode, out, err)
	}
	return out
}

func queryTrade(t *testing.T, api native.NativeApiService, no string) (*payments.Transaction, error) {
	tx, _, err := api.QueryOrderByOutTradeNo(context.Background(), native.QueryOrderByOutTradeNoRequest{OutTradeNo: core.String(no), Mchid: core.String(WechatMchID)})
	return tx, err
}

// TestWechatThroughSDK: the SDK (which verifies every answer's signature
// with the platform public key and its ID) drives a trade through the
// fake: prepay (again: the same code_url; another amount: refused), query
// NOTPAY, paid by the control API, SUCCESS, close refused, refunds
// idempotent by out_refund_no, REFUND, the refund query, the unknown
// trade and refund, and a trade closed.
func TestWechatThroughSDK(t *testing.T) {
	s := startWechat(t)
	c := merchantClient(t, s)
	api, refunds := native.NativeApiService{Client: c}, refunddomestic.RefundsApiService{Client: c}
	ctx := context.Background()

	resp, _, err := api.Prepay(ctx, prepay("W1", 1234, "http://127.0.0.1:1/notify"))
	if err != nil {
		t.Fatal(err)
	}
	if want := s.URL() + "/scan/wechat/W1"; *resp.CodeUrl != want {
		t.Errorf("code_url %s, want %s", *resp.CodeUrl, want)
	}
	if again, _, err := api.Prepay(ctx, prepay("W1", 1234, "http://127.0.0.1:1/notify")); err != nil || *again.CodeUrl != *resp.CodeUrl {
		t.Errorf("prepay again: %v, %v", again, err)
	}
	_, _, err = api.Prepay(ctx, prepay("W1", 999, "http://127.0.0.1:1/notify"))
	wantAPIError(t, "prepay with another amount", err, http.StatusBadRequest, "INVALID_REQUEST")
	other := prepay("W3", 1234, "http://127.0.0.1:1/notify")
	other.Appid = core.String("wx_other")
	_, _, err = api.Prepay(ctx, other)
	wantAPIError(t, "prepay for another app", err, http.StatusBadRequest, "APPID_MCHID_NOT_MATCH")
	_, _, err = api.QueryOrderByOutTradeNo(ctx, native.QueryOrderByOutTradeNoRequest{OutTradeNo: core.String("W1"), Mchid: core.String("1900000002")})
	wantAPIError(t, "query for another merchant", err, http.StatusBadRequest, "PARAM_ERROR")

	tx, err := queryTrade(t, api, "W1")
	if err != nil || *tx.TradeState != "NOTPAY" || *tx.Amount.Total != 1234 {
		t.Fatalf("query of an open trade: %+v, %v", tx, err)
	}
	wxControl(t, s, http.MethodPost, "/control/wechat/pay?out_trade_no=W1&notify=none")
	tx, err = queryTrade(t, api, "W1")
	if err != nil || *tx.TradeState != "SUCCESS" || tx.TransactionId == nil || tx.SuccessTime == nil {
		t.Fatalf("query of a paid trade: %+v, %v", tx, err)
	}
	_, err = api.CloseOrder(ctx, native.CloseOrderRequest{OutTradeNo: core.String("W1"), Mchid: core.String(WechatMchID)})
	wantAPIError(t, "close of a paid trade", err, http.StatusBadRequest, "ORDERPAID")

	ask := refunddomestic.CreateRequest{OutTradeNo: core.String("W1"), OutRefundNo: core.String("WR1"),
		Amount: &refunddomestic.AmountReq{Refund: core.Int64(1000), Total: core.Int64(1234), Currency: core.String("CNY")}}
	r1, _, err := refunds.Create(ctx, ask)
	if err != nil || *r1.Status != refunddomestic.STATUS_SUCCESS {
		t.Fatalf("refund: %+v, %v", r1, err)
	}
	r2, _, err := refunds.Create(ctx, ask)
	if err != nil || *r2.RefundId != *r1.RefundId {
		t.Fatalf("refund again: %+v, %v; want refund %s", r2, err, *r1.RefundId)
	}
	tr, _ := s.Core().Store.Get(wechatName, "W1", time.Now())
	if len(tr.Refunds) != 1 || tr.Refunds[0].Calls != 2 || tr.Refunds[0].Amount != 1000 {
		t.Errorf("refunds %+v, want one of 1000 asked twice", tr.Refunds)
	}
	ask.Amount.Refund = core.Int64(900)
	_, _, err = refunds.Create(ctx, ask)
	wantAPIError(t, "the refund asked again for another amount", err, http.StatusBadRequest, "INVALID_REQUEST")
	ask.Amount.Refund = core.Int64(1000)
	ask.OutRefundNo = core.String("WR2")
	_, _, err = refunds.Create(ctx, ask)
	wantAPIError(t, "a refund beyond what is left", err, http.StatusBadRequest, "NOT_ENOUGH")
	if tx, err = queryTrade(t, api, "W1"); err != nil || *tx.TradeState != "REFUND" {
		t.Errorf("query of a refunded trade: %+v, %v", tx, err)
	}
	got, _, err := refunds.QueryByOutRefundNo(ctx, refunddomestic.QueryByOutRefundNoRequest{OutRefundNo: core.String("WR1")})
	if err != nil || *got.Status != refunddomestic.STATUS_SUCCESS || *got.OutTradeNo != "W1" || *got.Amount.Refund != 1000 {
		t.Errorf("refund query: %+v, %v", got, err)
	}
	_, _, err = refunds.QueryByOutRefundNo(ctx, refunddomestic.QueryByOutRefundNoRequest{OutRefundNo: core.String("WR9")})
	wantAPIError(t, "query of an unknown refund", err, http.StatusNotFound, "RESOURCE_NOT_EXISTS")
	_, err = queryTrade(t, api, "W9")
	wantAPIError(t, "query of an unknown trade", err, http.StatusNotFound, "ORDER_NOT_EXIST")

	if _, _, err := api.Prepay(ctx, prepay("W2", 500, "http://127.0.0.1:1/notify")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // closing a closed trade is no error
		if _, err := api.CloseOrder(ctx, native.CloseOrderRequest{OutTradeNo: core.String("W2"), Mchid: core.String(WechatMchID)}); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	if tx, err = queryTrade(t, api, "W2"); err != nil || *tx.TradeState != "CLOSED" {
		t.Errorf("query of a closed trade: %+v, %v", tx, err)
	}
	_, _, err = api.Prepay(ctx, prepay("W2", 500, "http://127.0.0.1:1/notify"))
	wantAPIError(t, "prepay of a closed trade", err, http.StatusBadRequest, "ORDER_CLOSED")
}

// TestWechatRefusesRequests: a request the merchant did not sign is
// refused 401 SIGN_ERROR and changes nothing: signed by another key,
// naming another serial, changed after signing, or without Authorization;
// and the fake's answers fail an SDK that trusts another key.
func TestWechatRefusesRequests(t *testing.T) {
	s := startWechat(t)
	k := s.Core().Keys
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub := &k.WechatPlatform.PublicKey
	cases := map[string]*core.Client{
		"another key":      wxSDK(t, s, stranger, k.WechatMerchantSerial, k.WechatPublicKeyID, pub, nil),
		"another merchant": wxSDKOf(t, s, "1900000002", k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, pub, nil),
		"another serial":   wxSDK(t, s, k.WechatMerchant, "0123456789ABCDEF", k.WechatPublicKeyID, pub, nil),
		"changed after signing": wxSDK(t, s, k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, pub, func(r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte(`"total":1234`), []byte(`"total":1`), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}),
		"another path": wxSDK(t, s, k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, pub, func(r *http.Request) {
			r.URL.RawQuery = "mchid=1900000002"
		}),
		"no Authorization": wxSDK(t, s, k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, pub, func(r *http.Request) {
			r.Header.Del("Authorization")
		}),
	}
	for name, c := range cases {
		_, _, err := (&native.NativeApiService{Client: c}).Prepay(context.Background(), prepay("X1", 1234, "http://127.0.0.1:1/notify"))
		wantAPIError(t, name, err, http.StatusUnauthorized, "SIGN_ERROR")
	}
	if trades := s.Core().Store.List(wechatName, time.Now()); len(trades) != 0 {
		t.Errorf("refused requests made trades: %+v", trades)
	}

	distrust := wxSDK(t, s, k.WechatMerchant, k.WechatMerchantSerial, k.WechatPublicKeyID, &stranger.PublicKey, nil)
	_, _, err = (&native.NativeApiService{Client: distrust}).Prepay(context.Background(), prepay("X2", 1234, "http://127.0.0.1:1/notify"))
	var ae *core.APIError
	if err == nil || errors.As(err, &ae) || !strings.Contains(err.Error(), "verify") {
		t.Errorf("an SDK trusting another key: %v; want its answer's signature refused", err)
	}
}

// TestWechatStaleRequest: a request signed properly 10 minutes ago is
// refused; the same signed now is answered.
func TestWechatStaleRequest(t *testing.T) {
	s := startWechat(t)
	k := s.Core().Keys
	const path, body = "/v3/pay/transactions/out-trade-no/S1/close", `{"mchid":"` + WechatMchID + `"}`
	for name, at := range map[string]time.Time{"10 minutes ago": time.Now().Add(-10 * time.Minute), "now": time.Now()} {
		ts := strconv.FormatInt(at.Unix(), 10)
		sig, err := signSHA256RSA(k.WechatMerchant, "POST\n"+path+"\n"+ts+"\nNONCE1\n"+body+"\n")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/wechat"+path, strings.NewReader(body))
		req.Header.Set("Authorization", wechatAuth+` mchid="`+WechatMchID+`",nonce_str="NONCE1",timestamp="`+ts+
			`",serial_no="`+k.WechatMerchantSerial+`",signature="`+sig+`"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[string]int{"10 minutes ago": http.StatusUnauthorized, "now": http.StatusNotFound}[name]
		if resp.StatusCode != want {
			t.Errorf("signed %s: HTTP %d %s; want %d", name, resp.StatusCode, b, want)
		}
	}
}

// signSHA256RSA signs msg as the merchant signs: SHA256 with RSA, base64.
func signSHA256RSA(key *rsa.PrivateKey, msg string) (string, error) {
	digest := sha256.Sum256([]byte(msg))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	return base64.StdEncoding.EncodeToString(sig), err
}
