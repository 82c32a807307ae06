package handler_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/handler"
	"seckill/model"
	"seckill/web"
)

func withWeb(d *handler.Deps) { d.Web = web.Files() }

// get serves a GET (or HEAD) with optional headers and returns the recorder.
func get(h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestWebApp: / is the page and /assets/ its files, with their types. They come
// with a strict CSP, no sniffing and revalidation by ETag. HEAD works; anything
// else stays a JSON 404, never a redirect.
func TestWebApp(t *testing.T) {
	e := newEnv(t, withWeb)
	tests := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/assets/app.js">`},
		{"/assets/app.js", "text/javascript; charset=utf-8", "hashchange"},
		{"/assets/dashboard.js", "text/javascript; charset=utf-8", "/admin/vouchers/"},
		{"/assets/style.css", "text/css; charset=utf-8", ":root"},
	}
	for _, tt := range tests {
		rec := get(e.h, http.MethodGet, tt.path)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tt.ctype {
			t.Errorf("GET %s: got %d %q, want 200 %q", tt.path, rec.Code, rec.Header().Get("Content-Type"), tt.ctype)
			continue
		}
		if !strings.Contains(rec.Body.String(), tt.contains) {
			t.Errorf("GET %s: body lacks %q", tt.path, tt.contains)
		}
		hd := rec.Header()
		if csp := hd.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP %q, want self-only scripts, no framing, nothing unsafe", tt.path, csp)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: nosniff %q, cache %q", tt.path, hd.Get("X-Content-Type-Options"), hd.Get("Cache-Control"))
		}
		etag := hd.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", tt.path)
			continue
		}
		if rec := get(e.h, http.MethodGet, tt.path, "If-None-Match", etag); rec.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: got %d, want 304", tt.path, rec.Code)
		}
		if rec := get(e.h, http.MethodHead, tt.path); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("HEAD %s: got %d with %d bytes, want 200 and no body", tt.path, rec.Code, rec.Body.Len())
		}
	}
	for _, path := range []string{"/assets/", "/assets", "/assets/nope.js", "/assets/../index.html", "/assets/%2e%2e/index.html", "/index.html", "/nope", "/admin", "/admin/", "//", "/ASSETS/app.js"} {
		rec := get(e.h, http.MethodGet, path)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: got %d (Location %q), want 404", path, rec.Code, rec.Header().Get("Location"))
		}
		if rec.Code == http.StatusNotFound && !json.Valid(rec.Body.Bytes()) {
			t.Errorf("GET %s: 404 body %q is not JSON", path, rec.Body.String())
		}
	}
	if rec := get(e.h, http.MethodPost, "/"); rec.Code != http.StatusMethodNotAllowed || !json.Valid(rec.Body.Bytes()) {
		t.Errorf("POST /: got %d %s, want 405 JSON", rec.Code, rec.Body.String())
	}
}

// TestWebWithoutApp: with no web app wired, / is the JSON 404 it was.
func TestWebWithoutApp(t *testing.T) {
	e := newEnv(t)
	assertError(t, e.do(http.MethodGet, "/", "", ""), http.StatusNotFound, handler.CodeNotFound)
}

// TestWebDoesNotShadowAPI: the app's routes are / and /assets/* only. No API
// route is under /assets/, and every embedded file is index.html or under
// assets/. The API routes still answer JSON with the app wired.
func TestWebDoesNotShadowAPI(t *testing.T) {
	e := newEnv(t, withWeb, func(d *handler.Deps) { d.History = fakeHistory{} })
	engine, ok := e.h.(*gin.Engine)
	if !ok {
		t.Fatalf("handler.New returned %T, want *gin.Engine", e.h)
	}
	for _, r := range engine.Routes() {
		web := r.Path == "/" || r.Path == "/assets/*file"
		if web != (strings.HasPrefix(r.Path, "/assets/") || r.Path == "/") {
			t.Errorf("route %s %s: under the web app's paths", r.Method, r.Path)
		}
		if web && r.Method != http.MethodGet && r.Method != http.MethodHead {
			t.Errorf("web route %s %s: want GET and HEAD only", r.Method, r.Path)
		}
	}
	err := fs.WalkDir(web.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if p != "index.html" && !strings.HasPrefix(p, "assets/") {
			t.Errorf("embedded file %s: not index.html nor under assets/", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/user/me", "/user/orders", "/voucher/list/1", "/voucher-order/1", "/admin/vouchers/1/audit"} {
		rec := get(e.h, http.MethodGet, path, "authorization", e.adminTok)
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("GET %s with the app wired: got %d %q, want a JSON answer", path, rec.Code, ct)
		}
	}
}

// TestWebAppFilesMissing: an app without index.html is a build defect,
// reported at once.
func TestWebAppFilesMissing(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with an app without index.html: no panic")
		}
	}()
	newEnv(t, func(d *handler.Deps) { d.Web = fstest.MapFS{"assets/app.js": {Data: []byte("x")}} })
}

type fakeHistory struct {
	orders []model.VoucherOrder
	err    error
}

func (f fakeHistory) Orders(_ context.Context, userID int64) ([]model.VoucherOrder, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []model.VoucherOrder
	for _, o := range f.orders {
		if o.UserID == userID {
			out = append(out, o)
		}
	}
	return out, nil
}

// TestMyOrders: GET /user/orders lists the caller's orders (ids as
// strings, statuses by name, total), needs a token, and maps failures.
func TestMyOrders(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h := fakeHistory{orders: []model.VoucherOrder{
		{ID: 1<<62 + 5, UserID: 7, VoucherID: 3, PayType: 1, Status: model.OrderStatusCreated, CreateTime: at},
		{ID: 2, UserID: 8, VoucherID: 3, Status: model.OrderStatusCreated, CreateTime: at},
	}}
	e := newEnv(t, func(d *handler.Deps) { d.History = h })
	r := e.do(http.MethodGet, "/user/orders", "", e.userTok)
	data := assertOK(t, r)
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0]["id"] != "4611686018427387909" || got[0]["status"] != "created" || got[0]["voucherId"] != 3.0 {
		t.Errorf("orders: got %v, want user 7's one order, id as a string", got)
	}
	if string(r.fields["total"]) != "1" {
		t.Errorf("total: got %s, want 1", r.fields["total"])
	}
	assertError(t, e.do(http.MethodGet, "/user/orders", "", ""), http.StatusUnauthorized, handler.CodeUnauthorized)

	e = newEnv(t, func(d *handler.Deps) { d.History = fakeHistory{err: model.Unavailable(context.DeadlineExceeded)} })
	assertError(t, e.do(http.MethodGet, "/user/orders", "", e.userTok), http.StatusServiceUnavailable, handler.CodeUnavailable)
	e = newEnv(t, func(d *handler.Deps) { d.History = fakeHistory{} })
	if data := assertOK(t, e.do(http.MethodGet, "/user/orders", "", e.userTok)); string(data) != "[]" {
		t.Errorf("no order: data %s, want []", data)
	}
}

// FuzzWebPath: any path under /assets/ is one of the app's files or a JSON 404,
// never a 5xx. It never serves a file outside assets/.
func FuzzWebPath(f *testing.F) {
	for _, s := range []string{"app.js", "", "../index.html", "%2e%2e/index.html", "..%2findex.html", "style.css/", "a/../app.js", "//app.js", "app.js?x=1", "\x00"} {
		f.Add(s)
	}
	e := newEnv(f, withWeb)
	index, err := fs.ReadFile(web.Files(), "index.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		req := rawRequest(t, http.MethodGet, "/assets/"+name, "")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		switch {
		case rec.Code >= 500:
			t.Fatalf("GET /assets/%q: got %d", name, rec.Code)
		case rec.Code == http.StatusOK:
			if rec.Body.String() == string(index) {
				t.Fatalf("GET /assets/%q served index.html", name)
			}
		case rec.Code == http.StatusNotFound:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("GET /assets/%q: 404 body %q is not JSON", name, rec.Body.String())
			}
		}
	})
}
