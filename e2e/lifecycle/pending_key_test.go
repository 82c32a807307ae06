package lifecycle

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/handler"
)

// TestAsyncKeyedPayWhilePending: async mode, the consumer holds each batch
// 3 s. A keyed pay sent right after the purchase is 409 ORDER_PENDING.
// That answer asks for a retry, so it is not kept. The retries with the
// same key run the pay again until the order is written, and the pay
// succeeds. The next retry replays that success.
func TestAsyncKeyedPayWhilePending(t *testing.T) {
	m, _, dsn, _ := apptest.PrivateBackends(t)
	a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn,
		"SECKILL_DEV_CONSUMER_DELAY": "3s"})
	h := a.Handler()
	vid := apptest.PublishVoucher(t, h, 5)
	token, err := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	if err != nil {
		t.Fatal(err)
	}
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil)
	var id string
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &id) != nil {
		t.Fatalf("buy: got %d %s", r.Status, r.Body.Data)
	}
	pay := func() (int, string, bool) {
		req := httptest.NewRequest(http.MethodPost, "/voucher-order/"+id+"/pay", nil)
		req.Header.Set("authorization", "Bearer "+token)
		req.Header.Set(handler.IdempotencyHeader, "pay-"+id)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var env struct {
			Code string `json:"code"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("pay: body %q: %v", rec.Body.String(), err)
		}
		return rec.Code, env.Code, rec.Header().Get(handler.ReplayedHeader) == "true"
	}
	if status, code, _ := pay(); code != handler.CodeOrderPending {
		t.Fatalf("pay before the write: got %d %s, want 409 %s", status, code, handler.CodeOrderPending)
	}
	pending := 1
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, code, replayed := pay()
		if code == handler.CodeOrderPending && time.Now().Before(deadline) {
			pending++
			continue
		}
		if status != http.StatusOK || replayed {
			t.Fatalf("pay with the same key after %d ORDER_PENDING: got %d %s replayed=%v, want the pay run: 200", pending, status, code, replayed)
		}
		break
	}
	if status, _, replayed := pay(); status != http.StatusOK || !replayed {
		t.Errorf("the retry after the success: got %d replayed=%v, want the success replayed", status, replayed)
	}
}
