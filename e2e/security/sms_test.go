package security

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"seckill/e2e/apptest"
)

// prodEnv is production with a secret and a webhook sender posting to rc.
func prodEnv(t testing.TB, rc *apptest.Receiver, more map[string]string) map[string]string {
	env := map[string]string{"SECKILL_ENV": "production", "SECKILL_JWT_SECRET": "sms-test-secret-0123456789abcdefgh"}
	maps.Copy(env, apptest.ProductionPay(t))
	for k, v := range rc.Env() {
		env[k] = v
	}
	for k, v := range more {
		env[k] = v
	}
	return env
}

// codeAnswer is the answer of POST /user/code with its sentTo.
type codeAnswer struct {
	Success  bool            `json:"success"`
	Code     string          `json:"code"`
	ErrorMsg string          `json:"errorMsg"`
	Data     json.RawMessage `json:"data"`
	SentTo   string          `json:"sentTo"`
}

func askCode(t *testing.T, h http.Handler, phone string) (int, codeAnswer) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/user/code?phone="+phone, nil)
	req.RemoteAddr = randomAddr()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var a codeAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatalf("/user/code: %d %q: %v", w.Code, w.Body.String(), err)
	}
	return w.Code, a
}

// TestProductionCodeByWebhook: in production the code goes to the webhook,
// signed; the answer names the masked phone and holds no code; the code
// the receiver got is the one stored, and it logs in.
func TestProductionCodeByWebhook(t *testing.T) {
	rc := apptest.NewReceiver(t)
	a, _ := loggedApp(t, prodEnv(t, rc, nil))
	h, rdb := a.Handler(), apptest.SharedRedis(t)
	phone := randomPhone()
	status, ans := askCode(t, h, phone)
	masked := phone[:3] + "****" + phone[7:]
	if status != http.StatusOK || len(ans.Data) != 0 || ans.SentTo != masked {
		t.Fatalf("/user/code: got %d data %s sentTo %q, want 200, no data, %s", status, ans.Data, ans.SentTo, masked)
	}
	got := rc.Code(phone)
	if posts, bad := rc.Counts(); got == "" || got != storedCode(t, rdb, phone) || posts != 1 || bad != 0 {
		t.Fatalf("receiver got %q (posts %d, bad %d), Redis holds %q: want the same code, one signed post", got, posts, bad, storedCode(t, rdb, phone))
	}
	if r := apptest.Login(t, h, phone, got, randomAddr()); r.Status != http.StatusOK {
		t.Fatalf("login with the received code: got %d %s", r.Status, r.Body.Code)
	}
}

// TestFailedSendStoresNoCode: a receiver that fails (500 on every try),
// never answers or redirects (307, never followed: its target gets
// nothing) makes /user/code a 503 UNAVAILABLE that says in words the code
// was not sent and not stored; Redis holds no code and the log says why,
// without the webhook URL's userinfo or query values.
func TestFailedSendStoresNoCode(t *testing.T) {
	var followed atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(elsewhere.Close)
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		reason string
	}{
		{"failing", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, "the SMS service failed"},
		{"slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "the SMS service did not answer in time"},
		{"redirecting", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
		}, "the SMS service refused the message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := apptest.NewReceiver(t)
			rc.Answer = tt.answer
			url := strings.Replace(rc.URL, "http://", "http://gwuser:gwpass@", 1) + "/send?apikey=SECRETKEY"
			a, buf := loggedApp(t, prodEnv(t, rc, map[string]string{"SECKILL_REQUEST_TIMEOUT": "400ms", "SECKILL_SMS_WEBHOOK_URL": url}))
			h, rdb := a.Handler(), apptest.SharedRedis(t)
			phone := randomPhone()
			masked := phone[:3] + "****" + phone[7:]
			status, ans := askCode(t, h, phone)
			if status != http.StatusServiceUnavailable || ans.Code != "UNAVAILABLE" ||
				!strings.Contains(ans.ErrorMsg, masked) || !strings.Contains(ans.ErrorMsg, tt.reason) || !strings.Contains(ans.ErrorMsg, "no code was stored") {
				t.Errorf("got %d %s %q, want 503 UNAVAILABLE naming %s, %q and no code stored", status, ans.Code, ans.ErrorMsg, masked, tt.reason)
			}
			if posts, _ := rc.Counts(); posts == 0 {
				t.Errorf("the receiver got no post")
			}
			if c := storedCode(t, rdb, phone); c != "" {
				t.Errorf("Redis holds the code %s that was never delivered", c)
			}
			log := string(buf.Bytes())
			if !strings.Contains(log, "login code not sent") || !strings.Contains(log, tt.reason) {
				t.Errorf("log: want \"login code not sent\" with %q:\n%s", tt.reason, log)
			}
			for _, secret := range []string{"gwuser", "gwpass", "SECRETKEY"} {
				if strings.Contains(log, secret) {
					t.Errorf("log: leaks the webhook URL's %q:\n%s", secret, log)
				}
			}
		})
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}
