package handler_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"seckill/handler"
	"seckill/metrics"
	"seckill/model"
)

// TestAdminNotReachableByCode: an admin's phone gets no code (none stored,
// none returned even in development) and its login is refused exactly like
// a wrong code, so the predictable admin phones of `seckill tokens --admin`
// (19000000001, ...) give nobody an admin token.
func TestAdminNotReachableByCode(t *testing.T) {
	for _, dev := range []bool{true, false} {
		t.Run(fmt.Sprintf("development=%v", dev), func(t *testing.T) {
			e := newEnv(t, func(d *handler.Deps) { d.Development = dev })
			const admin = "19900000009" // user 9, role admin
			r := e.do(http.MethodPost, "/user/code?phone="+admin, "", "")
			assertOK(t, r)
			codes := []string{"000000", "123456"}
			if d, ok := r.fields["data"]; ok {
				t.Errorf("code for an admin phone: got data %s, want none", d)
				codes = append(codes, r.str("data"))
			}
			if strings.Contains(e.log.String(), `"code":"`) {
				t.Errorf("log: got %s, want no code logged for an admin phone", e.log.String())
			}
			// A code sent while the phone was nobody's, then the phone
			// made an admin (seckill tokens --admin): refused all the same.
			const later = "19000000001"
			r = e.do(http.MethodPost, "/user/code?phone="+later, "", "")
			assertOK(t, r)
			e.users.mu.Lock()
			e.users.byID[50] = model.User{ID: 50, Phone: later, NickName: "admin_1", Role: model.RoleAdmin}
			e.users.mu.Unlock()
			if dev {
				r := e.do(http.MethodPost, "/user/login", fmt.Sprintf(`{"phone":%q,"code":%q}`, later, r.str("data")), "")
				assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
				if got, want := r.str("errorMsg"), "invalid code: wrong or expired"; got != want {
					t.Errorf("login of a phone made admin after its code was sent: errorMsg %q, want %q", got, want)
				}
			}
			for _, code := range codes {
				r := e.do(http.MethodPost, "/user/login", fmt.Sprintf(`{"phone":%q,"code":%q}`, admin, code), "")
				assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
				if got, want := r.str("errorMsg"), "invalid code: wrong or expired"; got != want {
					t.Errorf("errorMsg: got %q, want %q (the same as a wrong code)", got, want)
				}
			}
		})
	}
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

// TestMetricLabelsBounded: requests with made-up methods and random paths
// add no label value of their own to the request metrics: the method label
// takes known methods (others are OTHER), the route label registered routes
// (others are unmatched), the status label three-digit codes.
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
