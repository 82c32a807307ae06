package browser

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// TestHeimaFrontend: the course's frontend works unchanged against the app
// in heima style. A page is written from the description of the course's
// common.js (testdata/heima). It uses axios with base /api and sends the
// token raw in authorization. It reads success/errorMsg from 200 answers
// and redirects to the login page on 401. An nginx-like proxy serves it and
// strips the /api prefix. The proxy fronts the app over the real MariaDB
// and Redis, or the embedded backends without them. Headless Chromium logs
// in by code, opens the shop, buys and sees the order id. Then it sees a
// duplicate, a sold-out and a not-started voucher refused. Each gets its
// own message. Last it is sent to the login page on 401.
func TestHeimaFrontend(t *testing.T) {
	b := browsertest.New(t) // skips here (fails in CI) without Chromium
	// Over the real MariaDB and Redis when they are set, in development
	// mode. That mode puts login codes in answers. Else on the embedded
	// backends.
	a, backend := webTestApp(t, map[string]string{"SECKILL_API_STYLE": "heima"})

	// The data, through the admin API: a shop and three vouchers.
	admin := apptest.AdminToken(t, a.Handler())
	now := time.Now()
	r := apptest.Call(t, a.Handler(), http.MethodPost, "/shop", admin, map[string]any{
		"name": "103茶餐厅", "typeId": 1, "images": "/imgs/shop/1.jpg,/imgs/shop/2.jpg", "area": "大关",
		"address": "金华路锦昌文华苑29号", "x": 120.149192, "y": 30.316078, "avgPrice": 80, "score": 37,
		"openHours": "10:00-22:00",
	})
	shop := apptest.DataID(t, "create shop", r)
	publish := func(title string, stock int, begin, end time.Time) int64 {
		t.Helper()
		r := apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
			"shopId": shop, "title": title, "subTitle": "周一至周日", "rules": "每人限购一张",
			"payValue": 8000, "actualValue": 10000, "type": 1, "stock": stock,
			"beginTime": begin.Format(time.RFC3339), "endTime": end.Format(time.RFC3339),
		})
		return apptest.DataID(t, "publish "+title, r)
	}
	onSale := publish("100元代金券", 5, now.Add(-time.Minute), now.Add(time.Hour))
	lastOne := publish("50元代金券", 1, now.Add(-time.Minute), now.Add(time.Hour))
	later := publish("明日秒杀", 5, now.Add(time.Hour), now.Add(2*time.Hour))
	// Someone else buys the last unit of lastOne.
	other, err := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	if err != nil {
		t.Fatal(err)
	}
	if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", lastOne), other, nil); r.Status != http.StatusOK {
		t.Fatalf("buying the last unit: got %d %s", r.Status, r.Body.Code)
	}

	// The course's nginx: static pages, and /api/* proxied with the prefix
	// stripped (rewrite /api(/.*) $1 break; proxy_pass ...). The proxy
	// records what reaches the backend.
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &proxyLog{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, "/api")
			pr.Out.URL.RawPath = ""
		},
		ModifyResponse: func(resp *http.Response) error {
			rec.add(resp.Request.Method, resp.Request.URL.Path, resp.Request.Header.Get("authorization"), resp.StatusCode)
			return nil
		},
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", proxy)
	mux.Handle("/", http.FileServer(http.Dir("testdata/heima")))
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)

	// Log in by code.
	phone := fmt.Sprintf("139%08d", rand.IntN(100_000_000))
	b.Navigate(fmt.Sprintf("%s/login.html?next=%s", front.URL, url.QueryEscape(fmt.Sprintf("/shop-detail.html?id=%d", shop))))
	b.SetValue("#phone", phone)
	b.Click("#send-code")
	b.WaitText("#message", "验证码已发送")
	if code := browsertest.Eval[string](b, `document.getElementById("code").value`); !regexp.MustCompile(`^\d{6}$`).MatchString(code) {
		t.Fatalf("code field: got %q, want the 6-digit code of the answer", code)
	}
	b.Click("#login")
	b.WaitURL(`/shop-detail\.html\?id=` + strconv.FormatInt(shop, 10) + `$`)
	token := browsertest.Eval[string](b, `sessionStorage.getItem("token")`)
	if strings.Count(token, ".") != 2 {
		t.Fatalf("token in sessionStorage: got %q, want a JWT", token)
	}

	// The shop page: GET /shop/:id and the vouchers.
	b.WaitText("#shop-name", "103茶餐厅")
	if got := b.Text("#shop-address"); got != "金华路锦昌文华苑29号" {
		t.Errorf("address: got %q", got)
	}
	if got := b.Text("#shop-score"); got != "3.7" {
		t.Errorf("score: got %q, want 3.7", got)
	}
	if src := browsertest.Eval[string](b, `document.getElementById("shop-image").src`); !strings.HasSuffix(src, "/imgs/shop/1.jpg") {
		t.Errorf("cover image: got %q, want the first of images", src)
	}
	b.WaitText(fmt.Sprintf("#voucher-%d", onSale), "100元代金券")

	// Buy: the order id, as the answer's string.
	b.Click(fmt.Sprintf("#voucher-%d .buy", onSale))
	msg := b.WaitText("#message", "抢购成功")
	orderID := regexp.MustCompile(`订单号：(\d+)$`).FindStringSubmatch(msg)
	if orderID == nil {
		t.Fatalf("message: got %q, want the order id", msg)
	}
	if r := apptest.Call(t, a.Handler(), http.MethodGet, "/voucher-order/"+orderID[1], token, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body.Data), `"status":"created"`) {
		t.Errorf("the order %s the page showed: got %d %s, want the buyer's created order", orderID[1], r.Status, r.Body.Data)
	}
	b.WaitText(fmt.Sprintf("#voucher-%d .stock", onSale), "剩余 4")

	// Refusals: each its own message, read from a 200 answer.
	for _, tt := range []struct {
		voucher int64
		want    string
	}{
		{onSale, "不允许重复下单"},
		{lastOne, "库存不足"},
		{later, "秒杀尚未开始"},
	} {
		b.Click(fmt.Sprintf("#voucher-%d .buy", tt.voucher))
		if got := b.WaitText("#message", tt.want); got != tt.want {
			t.Errorf("voucher %d: message got %q, want %q", tt.voucher, got, tt.want)
		}
		// Clear the message, so that the next wait sees the next answer.
		browsertest.Eval[bool](b, `(document.getElementById("message").textContent = "", true)`)
	}

	// A token the backend refuses: 401, and the page goes to the login page.
	browsertest.Eval[bool](b, `(sessionStorage.setItem("token", "expired.or.forged"), true)`)
	b.Click(fmt.Sprintf("#voucher-%d .buy", onSale))
	b.WaitURL(`/login\.html\?next=`)
	b.WaitText("h1", "手机号登录")

	// What reached the backend: /api stripped, the token raw, refusals as
	// 200, the forged token 401.
	seckill := rec.find(http.MethodPost, "/voucher-order/seckill/")
	if len(seckill) != 5 {
		t.Fatalf("seckill requests through the proxy: got %d (%v), want 5", len(seckill), seckill)
	}
	for i, e := range seckill[:4] {
		if e.status != http.StatusOK {
			t.Errorf("seckill request %d: got status %d, want 200 (heima style)", i, e.status)
		}
		if e.authorization != token {
			t.Errorf("seckill request %d: authorization %q, want the raw token", i, e.authorization)
		}
	}
	if last := seckill[4]; last.status != http.StatusUnauthorized || last.authorization != "expired.or.forged" {
		t.Errorf("forged token: got %+v, want 401 with the raw header", last)
	}
	for _, e := range rec.all() {
		if strings.HasPrefix(e.path, "/api") {
			t.Errorf("request reached the backend with the /api prefix: %+v", e)
		}
	}
	if msgs := strings.Join(b.Console(), "\n"); strings.Contains(msgs, "exception") {
		t.Errorf("page exceptions:\n%s", msgs)
	}
}

// proxyLog records the requests the proxy sent to the backend.
type proxyLog struct {
	mu      sync.Mutex
	entries []proxied
}

type proxied struct {
	method, path, authorization string
	status                      int
}

func (l *proxyLog) add(method, path, authz string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, proxied{method, path, authz, status})
}

func (l *proxyLog) all() []proxied {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]proxied(nil), l.entries...)
}

func (l *proxyLog) find(method, prefix string) []proxied {
	var out []proxied
	for _, e := range l.all() {
		if e.method == method && strings.HasPrefix(e.path, prefix) {
			out = append(out, e)
		}
	}
	return out
}
