package handler_test

import (
	"context"
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

	"seckill/handler"
	"seckill/lock"
	"seckill/model"
	"seckill/observe/metrics"
	"seckill/service/account"
	"seckill/service/account/accounttest"
	"seckill/service/catalog"
	"seckill/service/catalog/catalogtest"
	"seckill/service/sale"
)

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
		"status": `"created"`, "payType": `"balance"`,
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
		"unpaid": 0.0, "paid": 0.0, "used": 0.0, "refunding": 0.0, "refunded": 0.0, "cancelled": 0.0, "expired": 0.0, "paidCancelled": 0.0,
	}
	if !maps.Equal(got, want) {
		t.Errorf("audit: got %v, want %v (sync mode: no redisStock, no pending)", got, want)
	}
	assertError(t, e.do(http.MethodGet, "/admin/vouchers/6/audit", "", e.adminTok), http.StatusNotFound, handler.CodeVoucherNotFound)
}

// The routes over the real seckill service, fake stores and the local lock:
// the whole sync flow as a client sees it.

type memOrders struct {
	mu       sync.Mutex
	vouchers *catalogtest.Vouchers
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
	if err := m.vouchers.Take(o.VoucherID); err != nil {
		return err
	}
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
	sv, ok := m.vouchers.Row(voucherID)
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
	return model.VoucherSnapshot{Stock: sv.Stock, InitialStock: sv.InitialStock, Orders: n, Unpaid: n, DistinctUsers: int64(len(users))}, nil
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
	e.vouchers.Seckill[1] = model.SeckillVoucher{VoucherID: 1, Stock: 1, InitialStock: 1, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
	e.vouchers.Seckill[2] = model.SeckillVoucher{VoucherID: 2, Stock: 5, InitialStock: 5, BeginTime: now.Add(time.Hour), EndTime: now.Add(2 * time.Hour)}
	svc := sale.NewSyncSeckill(sale.SyncSeckillDeps{
		Vouchers: e.vouchers, Orders: &memOrders{vouchers: e.vouchers, orders: map[int64]model.VoucherOrder{}},
		IDs: &seqIDs{}, Locker: locker, Rejects: memRejects{}, Log: slog.New(slog.DiscardHandler),
	}, sale.SyncSeckillConfig{})
	e.h = handler.New(handler.Deps{
		Services: handler.Services{
			Users:    account.NewUsers(e.users, accounttest.NewCodes(), nil, e.tokens, slog.New(slog.DiscardHandler), account.CodeConfig{}),
			Vouchers: catalog.NewVouchers(e.vouchers, e.shops, time.Now), Seckill: svc,
		},
		Access:        handler.Access{Tokens: e.tokens},
		Observability: handler.Observability{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Ready: func(context.Context) error { return nil }},
		Settings:      handler.Settings{RequestTimeout: 5 * time.Second},
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
