package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"seckill/handler"
	"seckill/model"
	"seckill/observe/metrics"
	"seckill/repository/redisstore"
	"seckill/service/sale"
	"seckill/testkit/testenv"
)

// fakeLifecycle pays and cancels by the answers queued in next, one per
// call (then a paid order), and remembers the keys it was given.
type fakeLifecycle struct {
	mu   sync.Mutex
	next []error
	keys []string
}

func (f *fakeLifecycle) change(_ context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	if len(f.next) > 0 {
		err := f.next[0]
		f.next = f.next[1:]
		if err != nil {
			return nil, err
		}
	}
	return &model.VoucherOrder{ID: orderID, UserID: userID, VoucherID: 3, Status: model.OrderStatusPaid}, nil
}

func (f *fakeLifecycle) Pay(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	return f.change(ctx, userID, orderID, key)
}

func (f *fakeLifecycle) Cancel(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	return f.change(ctx, userID, orderID, key)
}

func (f *fakeLifecycle) Refund(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	return f.change(ctx, userID, orderID, key)
}

func (f *fakeLifecycle) Deadline(o *model.VoucherOrder) time.Time {
	return o.CreateTime.Add(time.Minute)
}

func (f *fakeLifecycle) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// keyedEnv is an env whose keyed routes keep their keys in a miniredis,
// capped at maxKeys per user, with pay and cancel served by life.
func keyedEnv(t *testing.T, life *fakeLifecycle, maxKeys int, opts ...envOption) (*env, *miniredis.Miniredis) {
	t.Helper()
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	with := func(d *handler.Deps) {
		d.Idempotency = sale.NewIdempotency(redisstore.NewIdempotency(rdb, maxKeys), 0, d.RequestTimeout)
		d.Lifecycle, d.SimulatedPay = life, true
	}
	return newEnv(t, append([]envOption{with}, opts...)...), srv
}

// keyed sends a request with the raw Idempotency-Key header key and
// tells whether the answer was a replay.
func (e *env) keyed(method, path, key string) (response, bool) {
	e.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("authorization", "Bearer "+e.userTok)
	req.Header.Set(handler.IdempotencyHeader, key)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	r := response{status: rec.Code, body: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.fields); err != nil {
		e.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, r.body, err)
	}
	return r, rec.Header().Get(handler.ReplayedHeader) == "true"
}

// TestIdempotentRefusalsNotStored: a keyed pay whose answer is a refusal
// keeps nothing. A refusal that asks for a retry (ORDER_PENDING,
// RATE_LIMITED, UNAVAILABLE, INTERNAL) or that changed nothing
// (ORDER_NOT_FOUND, INVALID_ARGUMENT) leaves the key free. The retry
// with the same key runs the pay again and gets its success. That
// success is then replayed.
func TestIdempotentRefusalsNotStored(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"pending", model.ErrOrderPending, handler.CodeOrderPending},
		{"rate limited", model.RateLimited("slow down", time.Second), handler.CodeRateLimited},
		{"unavailable", model.Unavailable(errors.New("redis down")), handler.CodeUnavailable},
		{"internal", errors.New("boom"), handler.CodeInternal},
		{"not found", model.ErrOrderNotFound, handler.CodeOrderNotFound},
		{"invalid", model.InvalidArgument("orderId", "no"), handler.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			life := &fakeLifecycle{next: []error{tt.err}}
			e, srv := keyedEnv(t, life, 10)
			r, replayed := e.keyed(http.MethodPost, "/voucher-order/55/pay", "pay-1")
			if _, code, _ := handler.Classify(tt.err); r.str("code") != code || replayed {
				t.Fatalf("first attempt: got %d %s replayed=%v, want %s", r.status, r.str("code"), replayed, code)
			}
			if keys := srv.Keys(); len(keys) != 0 {
				t.Errorf("after the refusal Redis holds %v, want nothing", keys)
			}
			r, replayed = e.keyed(http.MethodPost, "/voucher-order/55/pay", "pay-1")
			if r.status != http.StatusOK || replayed {
				t.Fatalf("retry: got %d %s replayed=%v, want the pay run again: 200", r.status, r.body, replayed)
			}
			if _, replayed = e.keyed(http.MethodPost, "/voucher-order/55/pay", "pay-1"); !replayed {
				t.Errorf("after the success: not replayed, want it kept")
			}
			if n := len(life.calls()); n != 2 {
				t.Errorf("the pay ran %d times, want 2 (the refusal, the success)", n)
			}
		})
	}
}

// TestIdempotencyLargeAnswerNotKept: a success over 1 KiB is not stored,
// so Redis never holds a body past the bound. The retry runs again.
func TestIdempotencyLargeAnswerNotKept(t *testing.T) {
	e, srv := keyedEnv(t, &fakeLifecycle{}, 10, func(d *handler.Deps) {
		d.Lifecycle, d.SimulatedPay = bigLifecycle{&fakeLifecycle{}}, true
	})
	for i := range 2 {
		r, replayed := e.keyed(http.MethodPost, "/voucher-order/55/cancel", "big")
		if r.status != http.StatusOK || replayed || len(r.body) <= 1024 {
			t.Fatalf("attempt %d: got %d, %d bytes, replayed=%v, want a fresh 200 over 1 KiB", i, r.status, len(r.body), replayed)
		}
	}
	if keys := srv.Keys(); len(keys) != 0 {
		t.Errorf("Redis holds %v, want nothing", keys)
	}
}

// bigLifecycle cancels with a reason of 2 KiB.
type bigLifecycle struct{ *fakeLifecycle }

func (bigLifecycle) Cancel(_ context.Context, userID, orderID int64, _ string) (*model.VoucherOrder, error) {
	return &model.VoucherOrder{ID: orderID, UserID: userID, Status: model.OrderStatusCancelled, CancelReason: strings.Repeat("r", 2048)}, nil
}

// TestIdempotencyKeyRules: one key rule on every keyed route. 64 characters
// pass; 65 are 400 on the purchase, the pay and the cancel alike. A quoted
// key is the bare key: the pay records it unquoted, and a retry with the
// bare key replays the answer. The fingerprint reads the ids as numbers:
// /seckill/06 then /seckill/6 with one key is one request, replayed.
func TestIdempotencyKeyRules(t *testing.T) {
	life := &fakeLifecycle{}
	e, _ := keyedEnv(t, life, 10)
	long := strings.Repeat("k", model.MaxIdempotencyKey+1)
	for _, path := range []string{"/voucher-order/seckill/5", "/voucher-order/55/pay", "/voucher-order/55/cancel"} {
		r, _ := e.keyed(http.MethodPost, path, long)
		assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
		r, _ = e.keyed(http.MethodPost, path, strings.Repeat("m", model.MaxIdempotencyKey)+path)
		assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
	}
	if r, _ := e.keyed(http.MethodPost, "/voucher-order/55/pay", strings.Repeat("k", model.MaxIdempotencyKey)); r.status != http.StatusOK {
		t.Errorf("64-character key: got %d %s, want 200", r.status, r.body)
	}

	if r, replayed := e.keyed(http.MethodPost, "/voucher-order/56/pay", `"abc"`); r.status != http.StatusOK || replayed {
		t.Fatalf("quoted key: got %d %s replayed=%v, want 200", r.status, r.body, replayed)
	}
	if got := life.calls(); got[len(got)-1] != "abc" {
		t.Errorf("the pay recorded key %q, want abc (unquoted)", got[len(got)-1])
	}
	if r, replayed := e.keyed(http.MethodPost, "/voucher-order/56/pay", "abc"); r.status != http.StatusOK || !replayed {
		t.Errorf("bare key after the quoted one: got %d replayed=%v, want the answer replayed", r.status, replayed)
	}

	if r, replayed := e.keyed(http.MethodPost, "/voucher-order/seckill/06", "buy-6"); r.status != http.StatusOK || replayed {
		t.Fatalf("purchase of /06: got %d %s replayed=%v, want 200", r.status, r.body, replayed)
	}
	if r, replayed := e.keyed(http.MethodPost, "/voucher-order/seckill/6", "buy-6"); r.status != http.StatusOK || !replayed {
		t.Errorf("purchase of /6 with the key of /06: got %d %s replayed=%v, want the same request replayed", r.status, r.body, replayed)
	}
	if r, _ := e.keyed(http.MethodPost, "/voucher-order/seckill/7", "buy-6"); r.str("code") != handler.CodeIdempotencyReused {
		t.Errorf("the key on voucher 7: got %d %s, want %s", r.status, r.body, handler.CodeIdempotencyReused)
	}
}

// TestIdempotencyCap: a user holds at most the cap of live keys. Past it a
// new key is 429 RATE_LIMITED with Retry-After, and runs nothing. A kept
// key still replays. Another user has a cap of their own. Refusals hold no
// key, so they never count.
func TestIdempotencyCap(t *testing.T) {
	life := &fakeLifecycle{}
	e, srv := keyedEnv(t, life, 3)
	for i := range 3 {
		if r, _ := e.keyed(http.MethodPost, "/voucher-order/55/cancel", fmt.Sprintf("c-%d", i)); r.status != http.StatusOK {
			t.Fatalf("key %d: got %d %s, want 200", i, r.status, r.body)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/voucher-order/55/cancel", nil)
	req.Header.Set("authorization", "Bearer "+e.userTok)
	req.Header.Set(handler.IdempotencyHeader, "c-3")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), handler.CodeRateLimited) || rec.Header().Get("Retry-After") == "" {
		t.Errorf("fourth key: got %d %s Retry-After=%q, want 429 RATE_LIMITED with Retry-After", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
	if n := len(life.calls()); n != 3 {
		t.Errorf("the cancel ran %d times, want 3 (not for the key past the cap)", n)
	}
	if _, replayed := e.keyed(http.MethodPost, "/voucher-order/55/cancel", "c-0"); !replayed {
		t.Errorf("a kept key past the cap: not replayed")
	}
	if got := len(srv.Keys()); got != 4 {
		t.Errorf("Redis holds %d keys, want 3 records and the user's index: %v", got, srv.Keys())
	}
}

// TestClientCancelIsNotAnOutage: a client that hangs up before its key is
// claimed is no dependency down. The request is labelled 499
// CLIENT_CLOSED_REQUEST in the metrics, logged at debug level, and no
// ERROR is logged.
func TestClientCancelIsNotAnOutage(t *testing.T) {
	if status, code, _ := handler.Classify(model.Unavailable(context.Canceled)); status != handler.StatusClientClosed || code != handler.CodeClientClosed {
		t.Errorf("Classify(cancelled): got %d %s, want %d %s", status, code, handler.StatusClientClosed, handler.CodeClientClosed)
	}
	m := metrics.New()
	logs := &testenv.SyncBuffer{}
	e, _ := keyedEnv(t, &fakeLifecycle{}, 10, func(d *handler.Deps) {
		d.Metrics = m
		d.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone before the key is claimed
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/voucher-order/seckill/5", nil)
	req.Header.Set("authorization", "Bearer "+e.userTok)
	req.Header.Set(handler.IdempotencyHeader, "gone")
	e.h.ServeHTTP(httptest.NewRecorder(), req)

	if n := counted(t, m.Requests.WithLabelValues("/voucher-order/seckill/:id", "POST", "499")); n != 1 {
		t.Errorf("requests labelled 499: %v, want 1", n)
	}
	if n := counted(t, m.Requests.WithLabelValues("/voucher-order/seckill/:id", "POST", "503")); n != 0 {
		t.Errorf("requests labelled 503: %v, want 0", n)
	}
	out := logs.String()
	if strings.Contains(out, `"level":"ERROR"`) {
		t.Errorf("log has an ERROR for a client's cancel: %s", out)
	}
	if !strings.Contains(out, `"msg":"request abandoned by its client"`) || !strings.Contains(out, `"level":"DEBUG"`) {
		t.Errorf("log: got %s, want a DEBUG line naming the abandoned request", out)
	}
}

// counted is a counter's value.
func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}
