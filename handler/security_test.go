package handler_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill/handler"
	"seckill/model"
	"seckill/observe/metrics"
	"seckill/service/account"
	"seckill/service/account/accounttest"
)

// TestAdminNotReachableByCode: an admin's phone is answered like any other. A
// code is stored, returned in development only, and logged alike. So the
// predictable admin phones of `seckill tokens --admin` cannot be told apart.
// Its login is refused exactly like a wrong code, even with the right code. So
// the code flow gives nobody an admin token.
func TestAdminNotReachableByCode(t *testing.T) {
	for _, dev := range []bool{true, false} {
		t.Run(fmt.Sprintf("development=%v", dev), func(t *testing.T) {
			const admin, user = "19900000009", "13800000007"
			users := &accounttest.Users{ByID: map[int64]model.User{9: {ID: 9, Phone: admin, NickName: "boss", Role: model.RoleAdmin}}, Next: 100}
			codes := accounttest.NewCodes()
			e := newEnv(t, func(d *handler.Deps) { d.Development = dev },
				withCodeLimits(users, codes, accounttest.NewCodeLimits(), account.CodeConfig{Cooldown: time.Minute, Daily: 10, PerAddr: 30}))
			ra := e.do(http.MethodPost, "/user/code?phone="+admin, "", "")
			ru := e.do(http.MethodPost, "/user/code?phone="+user, "", "")
			assertOK(t, ra)
			assertOK(t, ru)
			_, aData := ra.fields["data"]
			_, uData := ru.fields["data"]
			if aData != dev || uData != dev || len(ra.body) != len(ru.body) {
				t.Errorf("answers: admin %s, user %s, want the same shape (a code in development only)", ra.body, ru.body)
			}
			stored := codes.Code(admin)
			if len(stored) != 6 || (dev && ra.str("data") != stored) {
				t.Fatalf("code of the admin phone: stored %q, answered %s, want it stored like a user's", stored, ra.body)
			}
			for _, code := range []string{wrongCode(stored), stored} {
				r := e.do(http.MethodPost, "/user/login", fmt.Sprintf(`{"phone":%q,"code":%q}`, admin, code), "")
				assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
				if got, want := r.str("errorMsg"), "invalid code: wrong or expired"; got != want {
					t.Errorf("login with %q: errorMsg %q, want %q (the same as a wrong code)", code, got, want)
				}
			}
		})
	}
}

// wrongCode is a 6-digit code other than code.
func wrongCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

// knownMethods are the method label values the request metric may carry.
var knownMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "OTHER"}

// labelValues returns, per label name, the distinct values of the metric.
func labelValues(t *testing.T, m *metrics.Metrics, name string) map[string][]string {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				if !slices.Contains(out[lp.GetName()], lp.GetValue()) {
					out[lp.GetName()] = append(out[lp.GetName()], lp.GetValue())
				}
			}
		}
	}
	return out
}

// TestMetricLabelsBounded: made-up methods and random paths add no label
// values. The method label takes known methods, others are OTHER. The route
// label takes registered routes, others are unmatched. The status label takes
// three-digit codes.
func TestMetricLabelsBounded(t *testing.T) {
	var m *metrics.Metrics
	e := newEnv(t, func(d *handler.Deps) { m = d.Metrics })
	rnd := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/user/me", "/voucher/list/1", "/voucher-order/seckill/1", "/healthz"}
	for i := 0; i < 200; i++ {
		method := fmt.Sprintf("FOO%d", rnd.IntN(1_000_000))
		path := fmt.Sprintf("/x%d/%d", rnd.IntN(1_000_000), i)
		if i%2 == 0 {
			path = paths[i%len(paths)]
		}
		if i%5 == 0 {
			method = http.MethodGet
		}
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("authorization", e.userTok)
		e.h.ServeHTTP(httptest.NewRecorder(), req)
	}
	routes := []string{"unmatched", "/user/me", "/voucher/list/:shopId", "/voucher-order/seckill/:id", "/healthz"}
	for _, name := range []string{"seckill_http_requests_total", "seckill_http_request_duration_seconds"} {
		got := labelValues(t, m, name)
		for _, v := range got["method"] {
			if !slices.Contains(knownMethods, v) {
				t.Errorf("%s: method label %q, want one of %v", name, v, knownMethods)
			}
		}
		for _, v := range got["route"] {
			if !slices.Contains(routes, v) {
				t.Errorf("%s: route label %q, want one of %v", name, v, routes)
			}
		}
		for _, v := range got["status"] {
			if len(v) != 3 || v < "100" || v > "599" {
				t.Errorf("%s: status label %q, want a three-digit code", name, v)
			}
		}
		if n := len(got["method"]) + len(got["route"]) + len(got["status"]); n > 20 {
			t.Errorf("%s: %d label values after 200 requests (%v), want a handful", name, n, got)
		}
	}
}

// codeRequest is POST /user/code?phone= from the peer remote with the
// X-Forwarded-For header xff ("" = none).
func codeRequest(e *env, phone, remote, xff string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/user/code?phone="+phone, nil)
	req.RemoteAddr = remote
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// TestCodeRateLimited: a send beyond a limit is 429 RATE_LIMITED with the
// wait in Retry-After (whole seconds) and in the message.
func TestCodeRateLimited(t *testing.T) {
	users := accounttest.NewUsers(100)
	e := newEnv(t, withCodeLimits(users, accounttest.NewCodes(), accounttest.NewCodeLimits(),
		account.CodeConfig{Cooldown: 42 * time.Second, Daily: 10, PerAddr: 30}))
	if rec := codeRequest(e, "13812345678", "192.0.2.1:1234", ""); rec.Code != http.StatusOK {
		t.Fatalf("first code: got %d %s", rec.Code, rec.Body)
	}
	rec := codeRequest(e, "13812345678", "192.0.2.1:1234", "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "42" ||
		!strings.Contains(rec.Body.String(), `"code":"RATE_LIMITED"`) ||
		!strings.Contains(rec.Body.String(), "a code was just sent to this phone: try again in 42s") {
		t.Errorf("second code within the cooldown: got %d Retry-After %q %s, want 429 RATE_LIMITED, Retry-After 42 and the wait in the message",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

// TestCodePhoneFromQueryOnly: a phone in a form body is not read.
func TestCodePhoneFromQueryOnly(t *testing.T) {
	e := newEnv(t)
	req := httptest.NewRequest(http.MethodPost, "/user/code", strings.NewReader("phone=13812345678"))
	req.Header.Set("content-type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "invalid phone") {
		t.Errorf("phone in a form body: got %d %s, want 400 on the phone", rec.Code, rec.Body)
	}
}

// TestCodeClientAddress: the per-address limit counts the connection's peer. A
// spoofed X-Forwarded-For does not escape it. Behind a trusted proxy, the
// proxy's X-Forwarded-For names the client.
func TestCodeClientAddress(t *testing.T) {
	cfg := account.CodeConfig{Cooldown: time.Minute, Daily: 10, PerAddr: 2}
	t.Run("no trusted proxy", func(t *testing.T) {
		users, limits := accounttest.NewUsers(100), accounttest.NewCodeLimits()
		e := newEnv(t, withCodeLimits(users, accounttest.NewCodes(), limits, cfg))
		var last *httptest.ResponseRecorder
		for i := range 3 {
			last = codeRequest(e, fmt.Sprintf("1381234560%d", i), "203.0.113.9:5555", fmt.Sprintf("198.51.100.%d", i))
		}
		if last.Code != http.StatusTooManyRequests {
			t.Errorf("third code from one peer with spoofed X-Forwarded-For: got %d %s, want 429", last.Code, last.Body)
		}
		for _, k := range limits.Keys {
			if strings.HasPrefix(k, "addr:") && k != "addr:203.0.113.9" {
				t.Errorf("address counted: %s, want the peer 203.0.113.9", k)
			}
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		users, limits := accounttest.NewUsers(100), accounttest.NewCodeLimits()
		e := newEnv(t, func(d *handler.Deps) { d.TrustedProxies = []string{"203.0.113.0/24"} },
			withCodeLimits(users, accounttest.NewCodes(), limits, cfg))
		for i := range 3 {
			if rec := codeRequest(e, fmt.Sprintf("1381234560%d", i), "203.0.113.9:5555", fmt.Sprintf("198.51.100.%d", i)); rec.Code != http.StatusOK {
				t.Errorf("code %d through the trusted proxy: got %d %s, want 200 (three clients)", i, rec.Code, rec.Body)
			}
		}
		if !slices.Contains(limits.Keys, "addr:198.51.100.2") {
			t.Errorf("addresses counted: %v, want the clients the proxy names", limits.Keys)
		}
		// A peer outside the trusted proxies is itself the client.
		for range 3 {
			codeRequest(e, "13912345678", "192.0.2.50:1", "198.51.100.77")
		}
		if slices.Contains(limits.Keys, "addr:198.51.100.77") {
			t.Errorf("X-Forwarded-For of an untrusted peer believed: %v", limits.Keys)
		}
	})
}
