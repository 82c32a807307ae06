package fakepayenv

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadAndCalls: Load reads the env file SECKILL_TEST_FAKEPAY names;
// each helper calls its control path with its query and decodes the
// answer (a stand-in control API records what it got).
func TestLoadAndCalls(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		out := map[string]any{"trades": []any{map[string]any{"outTradeNo": "o-1"}},
			"headers": map[string]any{"Content-Type": "application/x-www-form-urlencoded"}, "body": "a=1"}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "fakepay.env")
	if err := os.WriteFile(path, []byte("# the fake\nSECKILL_ALIPAY_APP_ID=2021\n\nSECKILL_TEST_FAKEPAY_URL="+srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Var, path)
	env := Load(t)
	if env["SECKILL_ALIPAY_APP_ID"] != "2021" || env["SECKILL_TEST_FAKEPAY_URL"] != srv.URL {
		t.Fatalf("Load: %v", env)
	}
	Pay(t, env, "alipay", "o-1", "twice", true)
	Notify(t, env, "alipay", "o-1", "r-1")
	h, body := Notification(t, env, "alipay", "o-1", url.Values{"wrong_key": {"1"}})
	Down(t, env, "alipay", true)
	RefundMode(t, env, "alipay", "fail")
	trades := Trades(t, env, "alipay", "")
	want := []string{
		"POST /control/alipay/pay?late=1&notify=twice&out_trade_no=o-1",
		"POST /control/alipay/notify?out_refund_no=r-1&out_trade_no=o-1",
		"GET /control/alipay/notification?out_trade_no=o-1&wrong_key=1",
		"POST /control/alipay/down?on=1",
		"POST /control/alipay/refund-mode?mode=fail",
		"GET /control/alipay/trades?",
	}
	if len(got) != len(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %q, want %q", i, got[i], want[i])
		}
	}
	if h.Get("Content-Type") != "application/x-www-form-urlencoded" || string(body) != "a=1" {
		t.Errorf("Notification: %v %q", h, body)
	}
	if len(trades) != 1 || trades[0]["outTradeNo"] != "o-1" {
		t.Errorf("Trades: %v", trades)
	}
}
