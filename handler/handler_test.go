package handler_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/auth"
	"seckill/handler"
	"seckill/lock"
	"seckill/metrics"
	"seckill/model"
	"seckill/service"
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
	if n := e.vouchers.count(); n != 0 {
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
	if n := e.vouchers.count(); n != 1 {
		t.Errorf("vouchers published: got %d, want 1 (the admin's only)", n)
	}
}

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
				assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
				if msg := r.str("errorMsg"); !strings.Contains(msg, rt.param) {
					t.Errorf("errorMsg: got %q, want it to name %q", msg, rt.param)
				}
			})
		}
	}
	if n := len(e.seck.buyCalls()); n != 0 {
		t.Errorf("Buy calls with a bad id: got %d, want 0", n)
	}
}

// publishBody returns a valid publish body with edits applied: a nil value
// deletes the field, a json.RawMessage is written as is.
func publishBody(edits map[string]any) string {
	body := map[string]any{
		"shopId": 1, "title": "100 for 80", "subTitle": "weekdays", "rules": "one per user",
		"payValue": 8000, "actualValue": 10000, "type": 1, "stock": 100,
		"beginTime": "2030-01-01T10:00:00+08:00", "endTime": "2030-01-01T12:00:00+08:00",
	}
	for k, v := range edits {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestPublishBadBody(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name      string
		body      string
		wantField string
	}{
		{"empty body", "", "body"},
		{"malformed JSON", `{"shopId":1,`, "body"},
		{"not an object", `[1,2]`, "body"},
		{"two objects", publishBody(nil) + publishBody(nil), "body"},
		{"too large", publishBody(map[string]any{"rules": strings.Repeat("x", 70<<10)}), "body"},
		{"stock a string", publishBody(map[string]any{"stock": "x"}), "stock"},
		{"stock a fraction", publishBody(map[string]any{"stock": 1.5}), "stock"},
		{"stock overflowing", publishBody(map[string]any{"stock": raw("1e30")}), "stock"},
		{"shopId a string", publishBody(map[string]any{"shopId": "1"}), "shopId"},
		{"title a number", publishBody(map[string]any{"title": 5}), "title"},
		{"beginTime a number", publishBody(map[string]any{"beginTime": 1735689600}), "beginTime"},
		{"missing shopId", publishBody(map[string]any{"shopId": nil}), "shopId"},
		{"missing title", publishBody(map[string]any{"title": nil}), "title"},
		{"missing payValue", publishBody(map[string]any{"payValue": nil}), "payValue"},
		{"missing actualValue", publishBody(map[string]any{"actualValue": nil}), "actualValue"},
		{"missing type", publishBody(map[string]any{"type": nil}), "type"},
		{"missing stock", publishBody(map[string]any{"stock": nil}), "stock"},
		{"missing beginTime", publishBody(map[string]any{"beginTime": nil}), "beginTime"},
		{"missing endTime", publishBody(map[string]any{"endTime": nil}), "endTime"},
		{"null stock", publishBody(map[string]any{"stock": raw("null")}), "stock"},
		{"empty object", `{}`, "shopId"},
		{"bad beginTime", publishBody(map[string]any{"beginTime": "tomorrow"}), "beginTime"},
		{"bad endTime month", publishBody(map[string]any{"endTime": "2030-13-01T00:00:00"}), "endTime"},
		{"date only", publishBody(map[string]any{"endTime": "2030-01-02"}), "endTime"},
		{"end before begin", publishBody(map[string]any{"endTime": "2030-01-01T09:00:00+08:00"}), "endTime"},
		{"end equals begin", publishBody(map[string]any{"endTime": "2030-01-01T10:00:00+08:00"}), "endTime"},
		{"end in the past", publishBody(map[string]any{"beginTime": "2029-01-01T10:00:00Z", "endTime": "2029-01-01T12:00:00Z"}), "endTime"},
		{"stock 0", publishBody(map[string]any{"stock": 0}), "stock"},
		{"stock negative", publishBody(map[string]any{"stock": -5}), "stock"},
		{"type 2", publishBody(map[string]any{"type": 2}), "type"},
		{"blank title", publishBody(map[string]any{"title": "  "}), "title"},
		{"shopId 0", publishBody(map[string]any{"shopId": 0}), "shopId"},
		{"actualValue 0", publishBody(map[string]any{"actualValue": 0}), "actualValue"},
		{"endTime past year 9999 in UTC", publishBody(map[string]any{"endTime": "9999-12-31T23:59:59-01:00"}), "endTime"},
		{"beginTime before year 1 in UTC", publishBody(map[string]any{"beginTime": "0001-01-01T00:00:00+01:00"}), "beginTime"},
		{"beginTime before 2000", publishBody(map[string]any{"beginTime": "1999-06-01T00:00:00Z"}), "beginTime"},
		{"a time with a space", publishBody(map[string]any{"endTime": "2030-01-01 12:30:00"}), "endTime"},
		{"an unknown field", publishBody(map[string]any{"stok": 5}), "stok"},
		{"payValue above actualValue", publishBody(map[string]any{"payValue": 10001, "actualValue": 10000}), "payValue"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/voucher/seckill", tt.body, e.adminTok)
			assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
			if msg := r.str("errorMsg"); !strings.Contains(msg, tt.wantField) {
				t.Errorf("errorMsg: got %q, want it to name %q", msg, tt.wantField)
			}
		})
	}
	if n := e.vouchers.count(); n != 0 {
		t.Errorf("vouchers stored from bad bodies: got %d, want 0", n)
	}
}

func TestPublishSuccess(t *testing.T) {
	tests := []struct {
		name      string
		begin     string
		end       string
		wantBegin time.Time
		wantEnd   time.Time
	}{
		{"RFC 3339", "2030-01-01T10:00:00+08:00", "2030-01-01T12:00:00Z",
			time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)},
		{"zone-less in the server zone", "2030-01-01T10:00:00", "2030-01-01T12:30:00",
			time.Date(2030, 1, 1, 10, 0, 0, 0, testZone), time.Date(2030, 1, 1, 12, 30, 0, 0, testZone)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(http.MethodPost, "/voucher/seckill", publishBody(map[string]any{"beginTime": tt.begin, "endTime": tt.end, "stock": 3}), "Bearer "+e.adminTok)
			data := assertOK(t, r)
			if got := string(data); got != "101" {
				t.Errorf("data: got %s, want the voucher id as a number, 101", got)
			}
			sv, err := e.vouchers.GetSeckill(context.Background(), 101)
			if err != nil {
				t.Fatalf("stored voucher: %v", err)
			}
			if !sv.BeginTime.Equal(tt.wantBegin) || !sv.EndTime.Equal(tt.wantEnd) {
				t.Errorf("window: got %v..%v, want %v..%v", sv.BeginTime, sv.EndTime, tt.wantBegin, tt.wantEnd)
			}
			if sv.Stock != 3 || sv.InitialStock != 3 {
				t.Errorf("stock: got %d/%d, want 3/3", sv.Stock, sv.InitialStock)
			}
		})
	}
}

func TestListVouchers(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		assertOK(t, e.do(http.MethodPost, "/voucher/seckill", publishBody(nil), e.adminTok))
	}
	r := e.do(http.MethodGet, "/voucher/list/1", "", "")
	data := assertOK(t, r)
	if got := string(r.fields["total"]); got != "2" {
		t.Errorf("total: got %s, want 2", got)
	}
	var list []map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	if len(list) != 2 {
		t.Fatalf("vouchers: got %d, want 2", len(list))
	}
	for _, k := range []string{"id", "shopId", "title", "stock", "initialStock", "beginTime", "endTime", "payValue", "actualValue", "type"} {
		if _, ok := list[0][k]; !ok {
			t.Errorf("voucher field %q missing from %v", k, list[0])
		}
	}
	e.shops.shops[2] = model.Shop{ID: 2, Name: "empty", TypeID: 1, Address: "b", CreateTime: testNow, UpdateTime: testNow}
	assertError(t, e.do(http.MethodGet, "/voucher/list/999", "", ""), http.StatusNotFound, handler.CodeShopNotFound)
	empty := e.do(http.MethodGet, "/voucher/list/2", "", "")
	if got := string(assertOK(t, empty)); got != "[]" {
		t.Errorf("empty shop data: got %s, want []", got)
	}
	if got := string(empty.fields["total"]); got != "0" {
		t.Errorf("empty shop total: got %s, want 0", got)
	}
}

func TestSeckillSuccess(t *testing.T) {
	e := newEnv(t)
	const orderID = int64(1<<62 + 12345) // beyond 2^53: must travel as a string
	e.seck.buy = func(context.Context, int64, int64) (int64, error) { return orderID, nil }
	r := e.do(http.MethodPost, "/voucher-order/seckill/42", "", "Bearer "+e.userTok)
	data := assertOK(t, r)
	if got, want := string(data), fmt.Sprintf("%q", fmt.Sprint(orderID)); got != want {
		t.Errorf("data: got %s, want %s (a JSON string)", got, want)
	}
	calls := e.seck.buyCalls()
	if len(calls) != 1 {
		t.Fatalf("Buy calls: got %d, want 1", len(calls))
	}
	if calls[0].userID != 7 || calls[0].voucherID != 42 {
		t.Errorf("Buy(user, voucher): got (%d, %d), want (7, 42)", calls[0].userID, calls[0].voucherID)
	}
	if !calls[0].hasDeadline {
		t.Errorf("request context: got no deadline, want the request timeout")
	}
}

func TestSeckillRefusals(t *testing.T) {
	tests := []struct {
		err        error
		wantStatus int
		wantCode   string
	}{
		{model.ErrVoucherNotFound, http.StatusNotFound, handler.CodeVoucherNotFound},
		{model.ErrSeckillNotStarted, http.StatusConflict, handler.CodeSeckillNotStarted},
		{model.ErrSeckillEnded, http.StatusConflict, handler.CodeSeckillEnded},
		{model.ErrSoldOut, http.StatusConflict, handler.CodeSoldOut},
		{model.ErrDuplicateOrder, http.StatusConflict, handler.CodeDuplicateOrder},
		{fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey), http.StatusConflict, handler.CodeDuplicateOrder},
		{model.ErrStaleFence, http.StatusConflict, handler.CodeDuplicateOrder},
		{model.ErrRateLimited, http.StatusTooManyRequests, handler.CodeRateLimited},
		{model.Unavailable(errors.New("redis down")), http.StatusServiceUnavailable, handler.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.wantCode+" "+tt.err.Error(), func(t *testing.T) {
			e := newEnv(t)
			e.seck.buy = func(context.Context, int64, int64) (int64, error) { return 0, tt.err }
			r := e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)
			assertError(t, r, tt.wantStatus, tt.wantCode)
		})
	}
}

func TestSeckillOutcomeMetric(t *testing.T) {
	e := newEnv(t)
	e.seck.buy = func(_ context.Context, userID, _ int64) (int64, error) {
		if userID == 7 {
			return 0, model.ErrSoldOut
		}
		return 5, nil
	}
	other, err := e.tokens.Issue(8, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)
	}
	e.do(http.MethodPost, "/voucher-order/seckill/1", "", other)
	e.do(http.MethodPost, "/voucher-order/seckill/abc", "", other)
	body := metricsText(t, e)
	for _, want := range []string{
		`seckill_seckill_outcomes_total{code="SOLD_OUT"} 2`,
		`seckill_seckill_outcomes_total{code="OK"} 1`,
		`seckill_seckill_outcomes_total{code="INVALID_ARGUMENT"} 1`,
		`seckill_http_requests_total{method="POST",route="/voucher-order/seckill/:id",status="409"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics: missing %q", want)
		}
	}
}

// metricsText returns the /metrics page (not an envelope).
func metricsText(t *testing.T, e *env) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: got status %d, want 200", rec.Code)
	}
	return rec.Body.String()
}

func TestOrderRoute(t *testing.T) {
	e := newEnv(t)
	created := time.Date(2030, 1, 1, 10, 0, 1, 0, time.UTC)
	e.seck.order = func(_ context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
		if orderID != 1<<60 || userID != 7 {
			return nil, model.ErrOrderNotFound
		}
		return &model.VoucherOrder{ID: orderID, UserID: userID, VoucherID: 3, PayType: 1, Status: model.OrderStatusCreated, CreateTime: created}, nil
	}
	r := e.do(http.MethodGet, fmt.Sprintf("/voucher-order/%d", int64(1<<60)), "", e.userTok)
	data := assertOK(t, r)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	want := map[string]string{
		"id": fmt.Sprintf("%q", fmt.Sprint(int64(1<<60))), "userId": "7", "voucherId": "3",
		"status": `"created"`, "payType": "1",
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s: got %s, want %s", k, got[k], v)
		}
	}
	other, err := e.tokens.Issue(8, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	assertError(t, e.do(http.MethodGet, fmt.Sprintf("/voucher-order/%d", int64(1<<60)), "", other), http.StatusNotFound, handler.CodeOrderNotFound)
}

func TestAuditRoute(t *testing.T) {
	e := newEnv(t)
	e.seck.audit = func(_ context.Context, id int64) (*model.Audit, error) {
		if id != 5 {
			return nil, model.ErrVoucherNotFound
		}
		a := &model.Audit{VoucherID: 5, InitialStock: 10, Stock: 7, Orders: 3, DistinctUsers: 3, DuplicateRejections: 1}
		a.Check()
		return a, nil
	}
	data := assertOK(t, e.do(http.MethodGet, "/admin/vouchers/5/audit", "", e.adminTok))
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	want := map[string]any{
		"voucherId": 5.0, "initialStock": 10.0, "stock": 7.0, "orders": 3.0, "distinctUsers": 3.0,
		"duplicateRejections": 1.0, "oversold": false, "consistent": true,
		"unpaid": 0.0, "paid": 0.0, "cancelled": 0.0, "expired": 0.0, "paidCancelled": 0.0,
	}
	if !maps.Equal(got, want) {
		t.Errorf("audit: got %v, want %v (sync mode: no redisStock, no pending)", got, want)
	}
	assertError(t, e.do(http.MethodGet, "/admin/vouchers/6/audit", "", e.adminTok), http.StatusNotFound, handler.CodeVoucherNotFound)
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
			assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
			if msg := r.str("errorMsg"); !strings.Contains(msg, tt.wantField) {
				t.Errorf("errorMsg: got %q, want it to name %q", msg, tt.wantField)
			}
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

// The routes over the real seckill service, fake stores and the local lock:
// the whole sync flow as a client sees it.

type memOrders struct {
	mu       sync.Mutex
	vouchers *memVouchers
	orders   map[int64]model.VoucherOrder
}

func (m *memOrders) CreateOrder(_ context.Context, o *model.VoucherOrder, _ *model.Fence) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.orders {
		if x.UserID == o.UserID && x.VoucherID == o.VoucherID {
			return model.ErrDuplicateOrder
		}
	}
	m.vouchers.mu.Lock()
	defer m.vouchers.mu.Unlock()
	sv := m.vouchers.seckill[o.VoucherID]
	if sv.Stock <= 0 {
		return model.ErrSoldOut
	}
	sv.Stock--
	m.vouchers.seckill[o.VoucherID] = sv
	m.orders[o.ID] = *o
	return nil
}

func (m *memOrders) GetOrder(_ context.Context, id int64) (*model.VoucherOrder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return nil, model.ErrOrderNotFound
	}
	return &o, nil
}

func (m *memOrders) VoucherSnapshot(_ context.Context, voucherID int64, _ []model.QueuedOrder) (model.VoucherSnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vouchers.mu.Lock()
	sv, ok := m.vouchers.seckill[voucherID]
	m.vouchers.mu.Unlock()
	if !ok {
		return model.VoucherSnapshot{}, model.ErrVoucherNotFound
	}
	users := map[int64]bool{}
	var n int64
	for _, o := range m.orders {
		if o.VoucherID == voucherID {
			n++
			users[o.UserID] = true
		}
	}
	return model.VoucherSnapshot{Stock: sv.Stock, InitialStock: sv.InitialStock, Orders: n, DistinctUsers: int64(len(users))}, nil
}

type memRejects struct{}

func (memRejects) IncrDuplicateRejections(context.Context, int64) error { return nil }

func (memRejects) DuplicateRejections(context.Context, int64) (int64, error) { return 0, nil }

type seqIDs struct {
	mu sync.Mutex
	n  int64
}

func (s *seqIDs) NextID(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return 1<<60 + s.n, nil
}

func TestSeckillFlowOverRealService(t *testing.T) {
	e := newEnv(t)
	locker, err := lock.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	e.vouchers.seckill[1] = model.SeckillVoucher{VoucherID: 1, Stock: 1, InitialStock: 1, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
	e.vouchers.seckill[2] = model.SeckillVoucher{VoucherID: 2, Stock: 5, InitialStock: 5, BeginTime: now.Add(time.Hour), EndTime: now.Add(2 * time.Hour)}
	svc := service.NewSeckill(service.SeckillDeps{
		Vouchers: e.vouchers, Orders: &memOrders{vouchers: e.vouchers, orders: map[int64]model.VoucherOrder{}},
		IDs: &seqIDs{}, Locker: locker, Rejects: memRejects{}, Log: slog.New(slog.DiscardHandler),
	}, service.SeckillConfig{})
	e.h = handler.New(handler.Deps{
		Users:    service.NewUsers(e.users, &memCodes{codes: map[string]string{}}, nil, e.tokens, slog.New(slog.DiscardHandler), service.CodeConfig{}),
		Vouchers: service.NewVouchers(e.vouchers, e.shops, time.Now), Seckill: svc, Tokens: e.tokens,
		Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), RequestTimeout: 5 * time.Second,
		Ready: func(context.Context) error { return nil },
	})
	other, err := e.tokens.Issue(8, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, token string
		wantStatus        int
		wantCode          string
	}{
		{"first buyer", "/voucher-order/seckill/1", e.userTok, http.StatusOK, ""},
		{"same buyer again", "/voucher-order/seckill/1", e.userTok, http.StatusConflict, handler.CodeDuplicateOrder},
		{"second buyer, stock 1", "/voucher-order/seckill/1", other, http.StatusConflict, handler.CodeSoldOut},
		{"not started", "/voucher-order/seckill/2", other, http.StatusConflict, handler.CodeSeckillNotStarted},
		{"unknown voucher", "/voucher-order/seckill/3", other, http.StatusNotFound, handler.CodeVoucherNotFound},
	}
	var orderID string
	for _, tt := range tests {
		r := e.do(http.MethodPost, tt.path, "", tt.token)
		if tt.wantStatus == http.StatusOK {
			if err := json.Unmarshal(assertOK(t, r), &orderID); err != nil {
				t.Fatalf("%s: order id %s is not a JSON string: %v", tt.name, r.fields["data"], err)
			}
			continue
		}
		assertError(t, r, tt.wantStatus, tt.wantCode)
	}
	if want := fmt.Sprint(int64(1<<60 + 1)); orderID != want {
		t.Errorf("order id: got %q, want %q", orderID, want)
	}
	assertOK(t, e.do(http.MethodGet, "/voucher-order/"+orderID, "", e.userTok))
	assertError(t, e.do(http.MethodGet, "/voucher-order/"+orderID, "", other), http.StatusNotFound, handler.CodeOrderNotFound)
}
