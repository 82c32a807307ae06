package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/testkit/browsertest"
)

// TestWebScreens takes a picture of each page of the web app at 1280 and
// 390 px. The pages are login, buyer, my orders, admin and dashboard. It
// runs against a running server, named by three variables.
// SECKILL_SCREENS_URL is its address, e.g. http://127.0.0.1:8080, in
// development mode. SECKILL_SCREENS_ADMIN is an admin token.
// SECKILL_SCREENS_DIR is where the PNGs go. Skipped unless all are set. It
// is for comparing two builds by eye, not a check.
func TestWebScreens(t *testing.T) {
	base, admin, dir := os.Getenv("SECKILL_SCREENS_URL"), os.Getenv("SECKILL_SCREENS_ADMIN"), os.Getenv("SECKILL_SCREENS_DIR")
	if base == "" || admin == "" || dir == "" {
		t.Skip("SECKILL_SCREENS_URL, SECKILL_SCREENS_ADMIN and SECKILL_SCREENS_DIR not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	post := func(path string, body any) string {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("authorization", admin)
		req.Header.Set("content-type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var env struct {
			Success bool            `json:"success"`
			Data    json.RawMessage `json:"data"`
			Msg     string          `json:"errorMsg"`
		}
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil || !env.Success {
			t.Fatalf("POST %s: %d %s %v", path, res.StatusCode, env.Msg, err)
		}
		return strings.Trim(string(env.Data), `"`)
	}
	shop := post("/shop", map[string]any{"name": "Screens shop", "typeId": 1, "address": "Screens street 1", "x": 120.15, "y": 30.28})
	shopID, _ := strconv.ParseInt(shop, 10, 64)
	now := time.Now()
	vid := post("/voucher/seckill", map[string]any{
		"shopId": shopID, "title": "100 off lunch", "subTitle": "weekdays", "rules": "one per user",
		"payValue": 8000, "actualValue": 10000, "type": 1, "stock": 100,
		"beginTime": now.Add(-time.Minute).Format(time.RFC3339), "endTime": now.Add(time.Hour).Format(time.RFC3339),
	})
	post("/voucher/seckill", map[string]any{
		"shopId": shopID, "title": "Tomorrow's tea", "subTitle": "afternoons", "rules": "one per user",
		"payValue": 1000, "actualValue": 3000, "type": 1, "stock": 20,
		"beginTime": now.Add(20 * time.Hour).Format(time.RFC3339), "endTime": now.Add(30 * time.Hour).Format(time.RFC3339),
	})

	for _, w := range []int{1280, 390} {
		b := browsertest.New(t, browsertest.Options{Width: w, Height: 900})
		shot := func(name string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(b.Context(), 20*time.Second)
			defer cancel()
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			p := filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w))
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("saved %s", p)
		}
		settle := func() { time.Sleep(1500 * time.Millisecond) }
		b.Navigate(base + "/")
		browsertest.Eval[bool](b, fmt.Sprintf(`(localStorage.setItem("seckill.shop", %q), sessionStorage.clear(), true)`, shop))
		b.Navigate(base + "/")
		settle()
		shot("login")
		b.SetValue("#phone", fmt.Sprintf("137%08d", rand.IntN(100_000_000)))
		b.Click("#send-code")
		settle()
		b.Click("#login")
		b.WaitText("#login-card", "Log")
		settle()
		b.Click(fmt.Sprintf(`[data-voucher="%s"] .buy`, vid))
		settle()
		settle()
		shot("buyer")
		browsertest.Eval[bool](b, `(document.getElementById("orders").scrollIntoView(), true)`)
		ctx, cancel := context.WithTimeout(b.Context(), 20*time.Second)
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("table.orders")))
		cancel()
		if err == nil {
			p := filepath.Join(dir, fmt.Sprintf("orders-%d.png", w))
			if err := os.WriteFile(p, png, 0o644); err == nil {
				t.Logf("saved %s", p)
			}
		}
		browsertest.Eval[bool](b, `(location.hash = "#/admin", true)`)
		settle()
		b.SetValue("#admin-token", admin)
		b.Click("#admin-save")
		settle()
		shot("admin")
		browsertest.Eval[bool](b, fmt.Sprintf(`(location.hash = "#/admin/live/%s", true)`, vid))
		settle()
		settle()
		shot("dashboard")
	}
}
