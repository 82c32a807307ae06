package browser

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// TestWebProductionLogin: an app in production (real MariaDB and Redis, a
// JWT secret) sends login codes by webhook to a receiver that checks their
// signature. At a desktop's and a phone's width the buyer asks for a code;
// the page says where it went (the phone masked) and shows no code; the
// test reads the code from the receiver, types it, and the buyer is in.
func TestWebProductionLogin(t *testing.T) {
	apptest.IntegrationEnv(t)
	for _, width := range webWidths {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			rc := apptest.NewReceiver(t)
			env := rc.Env()
			env["SECKILL_ENV"], env["SECKILL_JWT_SECRET"] = "production", "browser-test-secret-0123456789abcdef"
			maps.Copy(env, apptest.ProductionPay(t))
			_, srv := webTestApp(t, env)
			b := browsertest.New(t, browsertest.Options{Width: width, Height: 900})
			b.Navigate(srv.URL + "/")

			phone := fmt.Sprintf("136%08d", rand.IntN(100_000_000))
			masked := phone[:3] + "****" + phone[7:]
			b.SetValue("#phone", phone)
			b.Click("#send-code")
			b.WaitText("#login-result", "Code sent to "+masked)
			b.Screenshot(fmt.Sprintf("production-code-sent-%d", width))
			if got := b.Text("#dev-code"); got != "" {
				t.Errorf("#dev-code in production: got %q, want empty", got)
			}
			if got := browsertest.Eval[string](b, `document.getElementById("code").value`); got != "" {
				t.Errorf("code field in production: got %q, want empty", got)
			}
			code := rc.Code(phone)
			if posts, bad := rc.Counts(); code == "" || posts != 1 || bad != 0 {
				t.Fatalf("receiver: code %q, %d posts, %d refused, want one signed post with a code", code, posts, bad)
			}
			b.SetValue("#code", code)
			b.Click("#login")
			b.WaitText("#login-card", "Logged in as")
			b.Screenshot(fmt.Sprintf("production-login-%d", width))
			noOverflow(t, b, "production login")
			noPageErrors(t, b)
		})
	}
}
