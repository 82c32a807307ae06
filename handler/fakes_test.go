package handler_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/auth"
	"seckill/handler"
	"seckill/model"
	"seckill/observe/metrics"
	"seckill/service/account"
	"seckill/service/account/accounttest"
	"seckill/service/catalog"
	"seckill/service/catalog/catalogtest"
	"seckill/testkit/testenv"
)

// The domain kits' in-memory stores (accounttest, catalogtest) behind the
// real user and voucher services, and a fake Sale. The tests assert the
// services' rules through the routes.

// withCodeLimits serves the code flow on users and codes with limits and
// cfg (Development as the env's); apply it after any option that sets
// Development.
func withCodeLimits(users *accounttest.Users, codes *accounttest.Codes, limits *accounttest.CodeLimits, cfg account.CodeConfig) envOption {
	return func(d *handler.Deps) {
		cfg.Development = d.Development
		d.Users = account.NewUsers(users, codes, limits, d.Tokens, d.Log, cfg)
	}
}

// buyCall is one Buy call as the fake Sale saw it.
type buyCall struct {
	userID, voucherID int64
	hasDeadline       bool
}

// fakeSale answers with the functions set on it and records Buy calls.
type fakeSale struct {
	mu    sync.Mutex
	calls []buyCall
	buy   func(ctx context.Context, userID, voucherID int64) (int64, error)
	order func(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error)
	audit func(ctx context.Context, voucherID int64) (*model.Audit, error)
}

func (f *fakeSale) Buy(ctx context.Context, userID, voucherID int64) (int64, error) {
	_, dl := ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, buyCall{userID: userID, voucherID: voucherID, hasDeadline: dl})
	buy := f.buy
	f.mu.Unlock()
	if buy == nil {
		return 1, nil
	}
	return buy(ctx, userID, voucherID)
}

// Refusal refuses nothing from memory: every purchase reaches Buy.
func (f *fakeSale) Refusal(int64) error { return nil }

func (f *fakeSale) Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	if f.order == nil {
		return nil, model.ErrOrderNotFound
	}
	return f.order(ctx, userID, orderID)
}

func (f *fakeSale) Audit(ctx context.Context, voucherID int64) (*model.Audit, error) {
	if f.audit == nil {
		return nil, model.ErrVoucherNotFound
	}
	return f.audit(ctx, voucherID)
}

func (f *fakeSale) buyCalls() []buyCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]buyCall(nil), f.calls...)
}

const testSecret = "handler-test-secret"

// testNow is the clock of the voucher service; testZone reads zone-less times.
var (
	testNow  = time.Date(2029, 12, 31, 0, 0, 0, 0, time.UTC)
	testZone = time.FixedZone("UTC+8", 8*3600)
)

// env is a handler over real services and fake stores.
type env struct {
	t        testing.TB
	h        http.Handler
	tokens   *auth.Tokens
	seck     *fakeSale
	users    *accounttest.Users
	vouchers *catalogtest.Vouchers
	shops    *catalogtest.Shops
	log      *testenv.SyncBuffer
	ready    error

	userTok, adminTok string
}

type envOption func(*handler.Deps)

func production(d *handler.Deps) { d.Development = false }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{
		t: t, tokens: auth.NewTokens(testSecret, time.Hour), seck: &fakeSale{},
		users: accounttest.NewUsers(0), vouchers: catalogtest.NewVouchers(100), shops: newMemShops(), log: &testenv.SyncBuffer{},
	}
	log := slog.New(slog.NewJSONHandler(e.log, nil))
	e.users.ByID[7] = model.User{ID: 7, Phone: "13800000007", NickName: "seven", Icon: "/i/7.png", Role: model.RoleUser}
	e.users.ByID[9] = model.User{ID: 9, Phone: "19900000009", NickName: "boss", Role: model.RoleAdmin}
	e.users.Next = 100
	d := handler.Deps{
		Services: handler.Services{
			Vouchers: catalog.NewVouchers(e.vouchers, e.shops, func() time.Time { return testNow }),
			Shops:    catalog.NewShops(e.shops, func() time.Time { return testNow }),
			Seckill:  e.seck,
		},
		Access:        handler.Access{Tokens: e.tokens},
		Observability: handler.Observability{Metrics: metrics.New(), Log: log, Ready: func(context.Context) error { return e.ready }},
		Settings:      handler.Settings{Development: true, RequestTimeout: 5 * time.Second, Location: testZone},
	}
	for _, o := range opts {
		o(&d)
	}
	if d.Users == nil {
		d.Users = account.NewUsers(e.users, accounttest.NewCodes(), nil, e.tokens, log, account.CodeConfig{Development: d.Development})
	}
	e.h = handler.New(d)
	var err error
	if e.userTok, err = e.tokens.Issue(7, model.RoleUser); err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if e.adminTok, err = e.tokens.Issue(9, model.RoleAdmin); err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return e
}

// response is a decoded reply: the status, the raw body and the envelope's
// fields, raw.
type response struct {
	status int
	body   string
	fields map[string]json.RawMessage
}

func (r response) str(field string) string {
	var s string
	if err := json.Unmarshal(r.fields[field], &s); err != nil {
		return "<not a string: " + string(r.fields[field]) + ">"
	}
	return s
}

// do sends a request; authorization is the raw header value ("" = none).
func (e *env) do(method, path, body, authorization string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if authorization != "" {
		req.Header.Set("authorization", authorization)
	}
	if body != "" {
		req.Header.Set("content-type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	r := response{status: rec.Code, body: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.fields); err != nil {
		e.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, r.body, err)
	}
	return r
}

// assertError checks the error envelope: exactly success:false, code and
// errorMsg.
// assertInvalid asserts a 400 INVALID_ARGUMENT whose message names field.
func assertInvalid(t *testing.T, r response, field string) {
	t.Helper()
	assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
	if msg := r.str("errorMsg"); !strings.Contains(msg, field) {
		t.Errorf("errorMsg: got %q, want it to name %q", msg, field)
	}
}

func assertError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status: got %d, want %d (body %s)", r.status, status, r.body)
	}
	if got := string(r.fields["success"]); got != "false" {
		t.Errorf("success: got %s, want false (body %s)", got, r.body)
	}
	if got := r.str("code"); got != code {
		t.Errorf("code: got %q, want %q (body %s)", got, code, r.body)
	}
	if r.str("errorMsg") == "" {
		t.Errorf("errorMsg: got empty, want a message (body %s)", r.body)
	}
	if len(r.fields) != 3 {
		t.Errorf("envelope fields: got %d in %s, want exactly success, code, errorMsg", len(r.fields), r.body)
	}
}

// assertOK checks a success envelope and returns its raw data.
func assertOK(t *testing.T, r response) json.RawMessage {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", r.status, r.body)
	}
	if got := string(r.fields["success"]); got != "true" {
		t.Errorf("success: got %s, want true (body %s)", got, r.body)
	}
	for _, k := range []string{"code", "errorMsg"} {
		if _, ok := r.fields[k]; ok {
			t.Errorf("success envelope has %q: %s", k, r.body)
		}
	}
	return r.fields["data"]
}

// fakeLimits allows each user perUser purchases in all, and remembers the
// client addresses it saw.
type fakeLimits struct {
	perUser int
	mu      sync.Mutex
	counts  map[int64]int
	addrs   []string
}

func newFakeLimits(perUser int) *fakeLimits {
	return &fakeLimits{perUser: perUser, counts: map[int64]int{}}
}

func (f *fakeLimits) Enabled() bool { return true }

func (f *fakeLimits) Settle(int64, int64, error) {}

func (f *fakeLimits) Admit(_ context.Context, userID, _ int64, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = append(f.addrs, addr)
	f.counts[userID]++
	if f.counts[userID] > f.perUser {
		return model.RateLimited("too many purchases from this user", 1500*time.Millisecond)
	}
	return nil
}
