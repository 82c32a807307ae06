// Package fakepayenv is the main module's tests' side of the fake pay
// providers (tools/internal/fakepay): Load reads the env file that
// SECKILL_TEST_FAKEPAY names (make test's testenv starts the fake and sets
// it; otherwise the test skips, or fails under CI=true), and the other
// functions call the fake's control API at SECKILL_TEST_FAKEPAY_URL.
// Each fails the test on a transport error or an answer other than 200,
// and returns the decoded JSON answer.
//
//	env := fakepayenv.Load(t)
//	out := fakepayenv.Pay(t, env, "alipay", outTradeNo, "once", false)
//	// out["trade"], out["deliveries"]: [{"url","status","body","error"}]
package fakepayenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"seckill/testkit/testenv"
)

// Var names the env file written by the fake.
const Var = "SECKILL_TEST_FAKEPAY"

// Load reads the env file: SECKILL_ALIPAY_*, SECKILL_WECHATPAY_*,
// SECKILL_TEST_FAKEPAY_URL (KEY=value lines).
func Load(t testing.TB) map[string]string {
	t.Helper()
	path := testenv.Need(t, Var)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", Var, err)
	}
	env := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s line %d: want KEY=value, have %q", path, i+1, line)
		}
		env[k] = v
	}
	if env["SECKILL_TEST_FAKEPAY_URL"] == "" {
		t.Fatalf("%s: no SECKILL_TEST_FAKEPAY_URL", path)
	}
	return env
}

// File reads the file an env variable names (a key).
func File(t testing.TB, env map[string]string, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(env[name])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// Pay pays a trade and sends its notification: notify is once, twice
// (the same notification two times, at once) or none; late pays a trade
// closed or past its expiry. Answers {"trade":{...},"deliveries":[...]}.
func Pay(t testing.TB, env map[string]string, provider, outTradeNo, notify string, late bool) map[string]any {
	t.Helper()
	q := url.Values{"out_trade_no": {outTradeNo}, "notify": {notify}}
	if late {
		q.Set("late", "1")
	}
	return Must(t, env, http.MethodPost, "/control/"+provider+"/pay", q)
}

// Notify (re)sends a trade's current notification, or with outRefundNo
// its refund's (a processing refund is done first). Answers
// {"trade":{...},"deliveries":[...]}.
func Notify(t testing.TB, env map[string]string, provider, outTradeNo, outRefundNo string) map[string]any {
	t.Helper()
	q := url.Values{"out_trade_no": {outTradeNo}}
	if outRefundNo != "" {
		q.Set("out_refund_no", outRefundNo)
	}
	return Must(t, env, http.MethodPost, "/control/"+provider+"/notify", q)
}

// Notification builds a trade's notification without sending it, as the
// provider would post it. tamper holds the control API's options:
// out_refund_no, amount (fen), app_id, time (unix seconds), as (another
// out_trade_no), wrong_key=1, alter=1.
func Notification(t testing.TB, env map[string]string, provider, outTradeNo string, tamper url.Values) (http.Header, []byte) {
	t.Helper()
	q := url.Values{}
	for k, v := range tamper {
		q[k] = v
	}
	q.Set("out_trade_no", outTradeNo)
	out := Must(t, env, http.MethodGet, "/control/"+provider+"/notification", q)
	h := http.Header{}
	headers, _ := out["headers"].(map[string]any)
	for k, v := range headers {
		h.Set(k, v.(string))
	}
	body, _ := out["body"].(string)
	return h, []byte(body)
}

// Down takes a provider's API down (503) or up again.
func Down(t testing.TB, env map[string]string, provider string, on bool) {
	t.Helper()
	v := "0"
	if on {
		v = "1"
	}
	Must(t, env, http.MethodPost, "/control/"+provider+"/down", url.Values{"on": {v}})
}

// RefundMode sets how a provider's next refunds answer: ok, processing
// (done later by Notify with the refund's number) or fail.
func RefundMode(t testing.TB, env map[string]string, provider, mode string) {
	t.Helper()
	Must(t, env, http.MethodPost, "/control/"+provider+"/refund-mode", url.Values{"mode": {mode}})
}

// TradeRefundMode sets how one trade's next refunds answer (ok,
// processing, fail), leaving the provider's other trades alone: tests of
// several packages share one fake.
func TradeRefundMode(t testing.TB, env map[string]string, provider, outTradeNo, mode string) {
	t.Helper()
	Must(t, env, http.MethodPost, "/control/"+provider+"/refund-mode", url.Values{"mode": {mode}, "out_trade_no": {outTradeNo}})
}

// Trades answers a provider's trades with their refunds ("" = all of
// them): each {"outTradeNo","tradeNo","state","amount","refunds":[...],...}.
func Trades(t testing.TB, env map[string]string, provider, outTradeNo string) []map[string]any {
	t.Helper()
	q := url.Values{}
	if outTradeNo != "" {
		q.Set("out_trade_no", outTradeNo)
	}
	out := Must(t, env, http.MethodGet, "/control/"+provider+"/trades", q)
	var trades []map[string]any
	list, _ := out["trades"].([]any)
	for _, x := range list {
		trades = append(trades, x.(map[string]any))
	}
	return trades
}

// Must calls the control API and fails the test unless it answers 200.
func Must(t testing.TB, env map[string]string, method, path string, q url.Values) map[string]any {
	t.Helper()
	code, out := Control(t, env, method, path, q)
	if code != http.StatusOK {
		t.Fatalf("fakepay %s %s?%s: %d %v", method, path, q.Encode(), code, out)
	}
	return out
}

// Control calls the control API and answers its status and decoded JSON
// (a refusal is {"error": "..."}).
func Control(t testing.TB, env map[string]string, method, path string, q url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, env["SECKILL_TEST_FAKEPAY_URL"]+path+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("fakepay %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("fakepay %s %s: %d %q: %v", method, path, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// BillLine adds a line of no trade to the provider's bills: a payment of
// amount fen by default; q may name out_trade_no, kind (payment or
// refund), out_refund_no, at (unix seconds). Answers {"line":{...}}.
func BillLine(t testing.TB, env map[string]string, provider string, amount int64, q url.Values) map[string]any {
	t.Helper()
	v := url.Values{}
	for k, x := range q {
		v[k] = x
	}
	v.Set("amount", fmt.Sprint(amount))
	return Must(t, env, http.MethodPost, "/control/"+provider+"/bill-line", v)
}
