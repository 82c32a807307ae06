package fakepay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyDir is one key directory for the package's tests: RSA keys take a
// while to make under -race.
var keyDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakepay-test-")
	if err != nil {
		panic(err)
	}
	keyDir = filepath.Join(dir, "keys")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// start runs a fake for the test, with its env file.
func start(t *testing.T) (*Server, map[string]string) {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "fakepay.env")
	s, err := Start(context.Background(), Options{KeyDir: keyDir, EnvFile: envFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env, err := ParseEnvFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return s, env
}

// control calls the control API and decodes its JSON answer.
func control(t *testing.T, s *Server, method, path string, q url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// receiver is a notify_url that records what it gets and answers success.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
		_, _ = io.WriteString(w, "success")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// TestEnvFileAndKeys: the env file names every Alipay setting with
// absolute paths that exist and the control URL; a second start on the
// same key directory keeps the keys.
func TestEnvFileAndKeys(t *testing.T) {
	s, env := start(t)
	if env["SECKILL_TEST_FAKEPAY_URL"] != s.URL() || env["SECKILL_ALIPAY_GATEWAY"] != s.URL()+"/alipay/gateway.do" {
		t.Errorf("env %v: want the URL %s and its gateway", env, s.URL())
	}
	for _, k := range []string{"SECKILL_ALIPAY_PRIVATE_KEY_FILE", "SECKILL_ALIPAY_PUBLIC_KEY_FILE"} {
		if !filepath.IsAbs(env[k]) {
			t.Errorf("%s=%q: want an absolute path", k, env[k])
		}
		if _, err := os.Stat(env[k]); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if env["SECKILL_ALIPAY_APP_ID"] != AlipayAppID {
		t.Errorf("app id %q", env["SECKILL_ALIPAY_APP_ID"])
	}
	again, err := LoadKeys(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.AlipayPlatform.Equal(s.Core().Keys.AlipayPlatform) || string(again.WechatAPIv3Key) != string(s.Core().Keys.WechatAPIv3Key) {
		t.Error("the keys changed on a second load of the same directory")
	}
	if again.Stranger.Equal(s.Core().Keys.Stranger) {
		t.Error("the stranger's key is the same on two loads: want a new one each start")
	}
	fi, err := os.Stat(filepath.Join(keyDir, AlipayPlatformPrivateFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("platform private key file: %v, mode %v; want 0600", err, fi.Mode())
	}
}

// TestListenLoopbackOnly: the fake refuses to listen beyond loopback.
func TestListenLoopbackOnly(t *testing.T) {
	if _, err := Start(context.Background(), Options{Listen: "0.0.0.0:0", KeyDir: keyDir}); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("listen on 0.0.0.0: %v, want a refusal", err)
	}
}

// TestNotifyLoopbackOnly: a notification goes to a loopback notify_url
// only: the URL check refuses other hosts, and the client's dialer
// refuses a non-loopback address even if a URL got past the check.
func TestNotifyLoopbackOnly(t *testing.T) {
	for u, ok := range map[string]bool{
		"http://127.0.0.1:8080/pay/notify": true, "http://localhost/x": true, "http://[::1]:9/x": true,
		"http://192.0.2.1/x": false, "https://openapi.alipay.com/x": false, "ftp://127.0.0.1/x": false,
		"http://127.0.0.1.example.com/x": false,
	} {
		if err := CheckLoopbackURL(u); (err == nil) != ok {
			t.Errorf("CheckLoopbackURL(%q) = %v, want allowed %v", u, err, ok)
		}
	}
	_, err := loopbackClient().Get("http://192.0.2.1:9/")
	if err == nil || !strings.Contains(err.Error(), "no loopback address") {
		t.Errorf("the client reached for 192.0.2.1: %v, want the dialer's refusal", err)
	}
	s, _ := start(t)
	now := time.Now()
	if _, err := s.Core().Store.Create(Trade{Provider: ProviderAlipay, OutTradeNo: "far", Amount: 100, NotifyURL: "http://192.0.2.1/notify"}, now); err != nil {
		t.Fatal(err)
	}
	code, out := control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"far"}})
	ds, _ := out["deliveries"].([]any)
	if code != 200 || len(ds) != 1 || !strings.Contains(ds[0].(map[string]any)["error"].(string), "loopback only") {
		t.Fatalf("pay of a trade notified far away: %d %v, want paid and the delivery refused", code, out)
	}
}

// TestStoreRules: a trade created twice answers the first unless its
// amount differs; payment past expiry or of a closed trade is refused
// unless late; refunds are idempotent and bounded by the trade.
func TestStoreRules(t *testing.T) {
	st := NewStore()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := st.Create(Trade{Provider: "p", OutTradeNo: "1", Amount: 500, ExpireAt: now.Add(time.Minute)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := st.Create(Trade{Provider: "p", OutTradeNo: "1", Amount: 500}, now); err != nil || b.TradeNo != a.TradeNo {
		t.Errorf("the same trade again: %v %v, want the first one", b.TradeNo, err)
	}
	if _, err := st.Create(Trade{Provider: "p", OutTradeNo: "1", Amount: 501}, now); err != ErrConflict {
		t.Errorf("another amount: %v, want ErrConflict", err)
	}
	if _, err := st.Pay("p", "1", false, now.Add(2*time.Minute)); err != ErrTradeExpired {
		t.Errorf("pay past expiry: %v, want ErrTradeExpired", err)
	}
	if got, _ := st.Get("p", "1", now.Add(2*time.Minute)); got.State != StateClosed {
		t.Errorf("past expiry the trade is %s, want closed", got.State)
	}
	if p, err := st.Pay("p", "1", true, now.Add(2*time.Minute)); err != nil || p.State != StatePaid {
		t.Errorf("late pay: %v %v, want paid", p.State, err)
	}
	_, _ = st.Create(Trade{Provider: "p", OutTradeNo: "2", Amount: 100}, now)
	_, _ = st.Close("p", "2", now)
	if _, err := st.Pay("p", "2", false, now); err != ErrTradeClosed {
		t.Errorf("pay of a closed trade: %v, want ErrTradeClosed", err)
	}
	if _, _, err := st.Refund("p", "1", Refund{OutRefundNo: "r1", Amount: 501}, now); err != ErrRefundAmount {
		t.Errorf("refund over the amount: %v", err)
	}
	for i := 1; i <= 3; i++ {
		_, r, err := st.Refund("p", "1", Refund{OutRefundNo: "r1", Amount: 300}, now)
		if err != nil || r.Calls != i || r.State != RefundDone {
			t.Fatalf("refund call %d: %+v %v, want done, Calls %d", i, r, err, i)
		}
	}
	if _, _, err := st.Refund("p", "1", Refund{OutRefundNo: "r2", Amount: 201}, now); err != ErrRefundAmount {
		t.Errorf("a second refund beyond what is left: %v", err)
	}
}

// TestTradeRefundMode: one trade's refund mode leaves the provider's
// other trades alone, and a failed refund is not done by a new ask with
// the same number, only by a new number.
func TestTradeRefundMode(t *testing.T) {
	st := NewStore()
	now := time.Now()
	for _, no := range []string{"a_1", "b_1"} {
		if _, err := st.Create(Trade{Provider: "alipay", OutTradeNo: no, Amount: 100, ExpireAt: now.Add(time.Hour)}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pay("alipay", no, false, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetTradeRefundMode("alipay", "a_1", ModeFail); err != nil {
		t.Fatal(err)
	}
	if _, r, err := st.Refund("alipay", "a_1", Refund{OutRefundNo: "a_1_r", Amount: 100}, now); err != nil || r.State != RefundFailed {
		t.Errorf("trade a refund: %+v %v, want failed", r, err)
	}
	if _, r, err := st.Refund("alipay", "b_1", Refund{OutRefundNo: "b_1_r", Amount: 100}, now); err != nil || r.State != RefundDone {
		t.Errorf("trade b refund: %+v %v, want done (the provider's mode)", r, err)
	}
	if err := st.SetTradeRefundMode("alipay", "a_1", ModeOK); err != nil {
		t.Fatal(err)
	}
	if _, r, err := st.Refund("alipay", "a_1", Refund{OutRefundNo: "a_1_r", Amount: 100}, now); err != nil || r.State != RefundFailed || r.Calls != 2 {
		t.Errorf("the failed number again: %+v %v, want failed, 2 calls", r, err)
	}
	if _, r, err := st.Refund("alipay", "a_1", Refund{OutRefundNo: "a_1_r2", Amount: 100}, now); err != nil || r.State != RefundDone {
		t.Errorf("a new number: %+v %v, want done", r, err)
	}
}
