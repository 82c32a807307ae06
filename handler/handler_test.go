package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"seckill/handler"
	"seckill/model"
)

func TestBadIDs(t *testing.T) {
	e := newEnv(t)
	ids := []string{"abc", "0", "-1", "99999999999999999999", "1.5", "1e3", "0x10", "%20"}
	routes := []struct {
		method, pattern, param, token string
	}{
		{http.MethodPost, "/voucher-order/seckill/%s", "id", e.userTok},
		{http.MethodGet, "/voucher-order/%s", "orderId", e.userTok},
		{http.MethodGet, "/admin/vouchers/%s/audit", "id", e.adminTok},
		{http.MethodGet, "/voucher/list/%s", "shopId", ""},
	}
	for _, rt := range routes {
		for _, id := range ids {
			path := fmt.Sprintf(rt.pattern, id)
			t.Run(path, func(t *testing.T) {
				r := e.do(rt.method, path, "", rt.token)
				assertInvalid(t, r, rt.param)
			})
		}
	}
	if n := len(e.seck.buyCalls()); n != 0 {
		t.Errorf("Buy calls with a bad id: got %d, want 0", n)
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	e := newEnv(t)
	e.seck.buy = func(context.Context, int64, int64) (int64, error) {
		panic("nil map write near password=hunter2")
	}
	r := e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)
	assertError(t, r, http.StatusInternalServerError, handler.CodeInternal)
	if strings.Contains(r.body, "hunter2") || strings.Contains(r.body, "nil map") {
		t.Errorf("body %s leaks the panic", r.body)
	}
	if !strings.Contains(e.log.String(), "hunter2") {
		t.Errorf("log: got %q, want the panic logged", e.log.String())
	}
	// The server survives.
	e.seck.buy = nil
	assertOK(t, e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok))
}

func TestUserCodeAndLogin(t *testing.T) {
	e := newEnv(t)
	r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
	code := ""
	if err := json.Unmarshal(assertOK(t, r), &code); err != nil || len(code) != 6 {
		t.Fatalf("code: got %s (%v), want 6 digits in development", r.fields["data"], err)
	}
	r = e.do(http.MethodPost, "/user/login", fmt.Sprintf(`{"phone":"13812345678","code":%q}`, code), "")
	var tok string
	if err := json.Unmarshal(assertOK(t, r), &tok); err != nil {
		t.Fatalf("token: %v", err)
	}
	claims, err := e.tokens.Parse(tok)
	if err != nil {
		t.Fatalf("login token does not verify: %v", err)
	}
	if claims.Role != model.RoleUser || claims.UserID != 101 {
		t.Errorf("claims: got uid %d role %q, want 101 %q", claims.UserID, claims.Role, model.RoleUser)
	}
	me := e.do(http.MethodGet, "/user/me", "", tok)
	var u struct{ ID int64 }
	if err := json.Unmarshal(assertOK(t, me), &u); err != nil || u.ID != 101 {
		t.Errorf("me: got %s (%v), want id 101", me.fields["data"], err)
	}
}

func TestUserCodeProductionHidesCode(t *testing.T) {
	e := newEnv(t, production)
	r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
	assertOK(t, r)
	if d, ok := r.fields["data"]; ok {
		t.Errorf("data: got %s, want none in production", d)
	}
}

func TestUserBadInput(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, path, body, wantField string
	}{
		{"code without phone", "/user/code", "", "phone"},
		{"code bad phone", "/user/code?phone=123", "", "phone"},
		{"login malformed", "/user/login", `{"phone":`, "body"},
		{"login empty", "/user/login", "", "body"},
		{"login phone a number", "/user/login", `{"phone":13812345678,"code":"123456"}`, "phone"},
		{"login bad phone", "/user/login", `{"phone":"1","code":"123456"}`, "phone"},
		{"login no code", "/user/login", `{"phone":"13812345678"}`, "code"},
		{"login wrong code", "/user/login", `{"phone":"13812345678","code":"nope"}`, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, tt.path, tt.body, "")
			assertInvalid(t, r, tt.wantField)
		})
	}
}

func TestHealthAndReady(t *testing.T) {
	e := newEnv(t)
	assertOK(t, e.do(http.MethodGet, "/healthz", "", ""))
	assertOK(t, e.do(http.MethodGet, "/readyz", "", ""))
	e.ready = errors.New(secretText)
	r := e.do(http.MethodGet, "/readyz", "", "")
	assertError(t, r, http.StatusServiceUnavailable, handler.CodeUnavailable)
	if strings.Contains(r.body, "hunter2") {
		t.Errorf("body %s leaks the readiness error", r.body)
	}
	assertOK(t, e.do(http.MethodGet, "/healthz", "", ""))
}

// TestNoRedirects: a path a route would match with a slash more or less,
// with another case or with a doubled slash is the JSON 404, never a
// redirect. A client that followed one would send its POST again.
func TestNoRedirects(t *testing.T) {
	e := newEnv(t)
	tests := []struct{ method, path string }{
		{http.MethodPost, "/voucher-order/seckill/1/"},
		{http.MethodPost, "/voucher-order/1/pay/"},
		{http.MethodPost, "/user/code/"},
		{http.MethodGet, "/user/me/"},
		{http.MethodGet, "/healthz/"},
		{http.MethodGet, "/HEALTHZ"},
		{http.MethodPost, "/Voucher-Order/seckill/1"},
		{http.MethodPost, "//voucher-order/seckill/1"},
		{http.MethodPost, "/voucher-order//seckill/1"},
		{http.MethodGet, "/voucher/list/1/"},
	}
	for _, tt := range tests {
		rec := get(e.h, tt.method, tt.path, "authorization", e.userTok)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"code":"NOT_FOUND"`) || rec.Header().Get("Location") != "" {
			t.Errorf("%s %s: got %d %s (Location %q), want the JSON 404 NOT_FOUND", tt.method, tt.path, rec.Code, rec.Body, rec.Header().Get("Location"))
		}
	}
	if n := len(e.seck.calls); n != 0 {
		t.Errorf("purchases made: got %d, want 0", n)
	}
}

func TestUnknownRoute(t *testing.T) {
	e := newEnv(t)
	assertError(t, e.do(http.MethodGet, "/nope", "", ""), http.StatusNotFound, handler.CodeNotFound)
	// A known route with another method: 405 with a code of its own (the
	// contract maps INVALID_ARGUMENT to 400 only).
	assertError(t, e.do(http.MethodGet, "/user/code?phone=13812345678", "", ""), http.StatusMethodNotAllowed, handler.CodeMethodNotAllowed)
	r := e.do(http.MethodGet, "/voucher-order/seckill/1", "", e.userTok)
	if r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET on a POST route: got %d, want 404 or 405", r.status)
	}
	if string(r.fields["success"]) != "false" {
		t.Errorf("GET on a POST route: body %s, want an error envelope", r.body)
	}
}
