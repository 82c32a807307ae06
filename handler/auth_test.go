package handler_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/auth"
	"seckill/handler"
	"seckill/model"
)

// signed returns a token over claims signed with method and key.
func signed(t testing.TB, method jwt.SigningMethod, key any, claims auth.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

func claimsFor(uid int64, role string, exp time.Time) auth.Claims {
	return auth.Claims{UserID: uid, Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: auth.Issuer, ExpiresAt: jwt.NewNumericDate(exp),
	}}
}

// escalated re-encodes tok's payload with role admin, keeping the signature.
func escalated(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	forged := strings.Replace(string(payload), `"role":"user"`, `"role":"admin"`, 1)
	if forged == string(payload) {
		t.Fatalf("payload %s has no user role to forge", payload)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
	return strings.Join(parts, ".")
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	future := time.Now().Add(time.Hour)
	tests := []struct {
		name, header string
	}{
		{"missing", ""},
		{"bearer without token", "Bearer "},
		{"bearer word only", "Bearer"},
		{"garbage", "not-a-token"},
		{"three garbage parts", "a.b.c"},
		{"basic auth", "Basic dXNlcjpwYXNz"},
		{"expired", signed(t, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(7, model.RoleUser, time.Now().Add(-time.Minute)))},
		{"expired with bearer", "Bearer " + signed(t, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(7, model.RoleUser, time.Now().Add(-time.Minute)))},
		{"wrong secret", signed(t, jwt.SigningMethodHS256, []byte("another-secret"), claimsFor(7, model.RoleUser, future))},
		{"alg HS512", signed(t, jwt.SigningMethodHS512, []byte(testSecret), claimsFor(7, model.RoleUser, future))},
		{"alg none", signed(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claimsFor(7, model.RoleAdmin, future))},
		{"no expiry", signed(t, jwt.SigningMethodHS256, []byte(testSecret), auth.Claims{UserID: 7, Role: model.RoleUser, RegisteredClaims: jwt.RegisteredClaims{Issuer: auth.Issuer}})},
		{"no user id", signed(t, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(0, model.RoleUser, future))},
		{"forged admin role", escalated(t, e.userTok)},
		{"truncated", e.userTok[:len(e.userTok)-3]},
	}
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/user/me", ""},
		{http.MethodPost, "/voucher-order/seckill/1", ""},
		{http.MethodGet, "/voucher-order/1", ""},
		{http.MethodGet, "/admin/vouchers/1/audit", ""},
		{http.MethodPost, "/voucher/seckill", "{}"},
	}
	for _, tt := range tests {
		for _, rt := range routes {
			t.Run(tt.name+" "+rt.path, func(t *testing.T) {
				r := e.do(rt.method, rt.path, rt.body, tt.header)
				assertError(t, r, http.StatusUnauthorized, handler.CodeUnauthorized)
			})
		}
	}
	if n := len(e.seck.buyCalls()); n != 0 {
		t.Errorf("Buy calls without a valid token: got %d, want 0", n)
	}
	if n := e.vouchers.Count(); n != 0 {
		t.Errorf("vouchers published without a valid token: got %d, want 0", n)
	}
}

func TestTokenHeaderForms(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, header string
	}{
		{"raw", e.userTok},
		{"Bearer", "Bearer " + e.userTok},
		{"lower-case bearer", "bearer " + e.userTok},
		{"extra spaces", "  Bearer   " + e.userTok + "  "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/user/me", "", tt.header)
			data := assertOK(t, r)
			var u struct {
				ID       int64  `json:"id"`
				NickName string `json:"nickName"`
				Icon     string `json:"icon"`
			}
			if err := json.Unmarshal(data, &u); err != nil {
				t.Fatalf("data %s: %v", data, err)
			}
			if u.ID != 7 || u.NickName != "seven" || u.Icon != "/i/7.png" {
				t.Errorf("me: got %+v, want id 7 seven /i/7.png", u)
			}
		})
	}
}

func TestMeUnknownUser(t *testing.T) {
	e := newEnv(t)
	tok, err := e.tokens.Issue(4242, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	r := e.do(http.MethodGet, "/user/me", "", tok)
	assertError(t, r, http.StatusUnauthorized, handler.CodeUnauthorized)
}

func TestAdminRoutes(t *testing.T) {
	e := newEnv(t)
	e.seck.audit = func(_ context.Context, id int64) (*model.Audit, error) {
		a := &model.Audit{VoucherID: id, InitialStock: 10, Stock: 7, Orders: 3, DistinctUsers: 3}
		a.Check()
		return a, nil
	}
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		token      string
		wantStatus int
	}{
		{"user publishes", http.MethodPost, "/voucher/seckill", publishBody(nil), e.userTok, http.StatusForbidden},
		{"user audits", http.MethodGet, "/admin/vouchers/1/audit", "", e.userTok, http.StatusForbidden},
		{"admin publishes", http.MethodPost, "/voucher/seckill", publishBody(nil), e.adminTok, http.StatusOK},
		{"admin audits", http.MethodGet, "/admin/vouchers/1/audit", "", e.adminTok, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.body, tt.token)
			if tt.wantStatus == http.StatusForbidden {
				assertError(t, r, http.StatusForbidden, handler.CodeForbidden)
				return
			}
			assertOK(t, r)
		})
	}
	if n := e.vouchers.Count(); n != 1 {
		t.Errorf("vouchers published: got %d, want 1 (the admin's only)", n)
	}
}
