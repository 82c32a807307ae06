package syncmode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/handler"
)

// keyedAnswer is an answer to a purchase with an Idempotency-Key.
type keyedAnswer struct {
	apptest.Result
	Replayed bool
}

// buyWithKey sends a purchase of vid with the Idempotency-Key key ("" =
// none) through h.
func buyWithKey(t testing.TB, h http.Handler, vid int64, token, key string) keyedAnswer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), nil)
	req.Header.Set("authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set(handler.IdempotencyHeader, key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := keyedAnswer{Replayed: rec.Header().Get(handler.ReplayedHeader) == "true"}
	a.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &a.Body); err != nil {
		t.Errorf("body %q is not an envelope: %v", rec.Body.String(), err)
	}
	return a
}

// replayUntilDone retries a purchase with key until its first attempt has
// answered (not IDEMPOTENCY_KEY_IN_FLIGHT), within a deadline.
func replayUntilDone(t testing.TB, h http.Handler, vid int64, token, key string) keyedAnswer {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := buyWithKey(t, h, vid, token, key)
		if a.Body.Code != handler.CodeIdempotencyFlight {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatal("the key stayed in flight past the deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdempotentPurchase: two instances, sync and async mode. 40 attempts
// of one user with one key race. The purchase runs once. Every other
// attempt is 409 IDEMPOTENCY_KEY_IN_FLIGHT or the replay of its answer. A
// retry on either instance replays the same order id. The key on another
// voucher is 422. Another user's same key is their own. A malformed key is
// 400. Without a key a second purchase is still DUPLICATE_ORDER.
func TestIdempotentPurchase(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			var apps []http.Handler
			for range 2 {
				if mode == "sync" {
					apps = append(apps, apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_DEV_CRITICAL_DELAY": "50ms"}).Handler())
				} else {
					apps = append(apps, apptest.StartAsync(t, nil).Handler())
				}
			}
			vid := apptest.PublishVoucher(t, apps[0], 10)
			user := apptest.RandomBase()
			tok, _ := apptest.DevTokens().Issue(user, "user")
			key := fmt.Sprintf("buy-%d", user)

			var mu sync.Mutex
			firsts, orderIDs := 0, map[string]int{}
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					a := buyWithKey(t, apps[i%2], vid, tok, key)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case a.Status == http.StatusOK && !a.Replayed:
						firsts++
						orderIDs[string(a.Body.Data)]++
					case a.Status == http.StatusOK:
						orderIDs[string(a.Body.Data)]++
					case a.Status == http.StatusConflict && a.Body.Code == handler.CodeIdempotencyFlight:
					default:
						t.Errorf("racing attempt: got %d %s, want 200 or 409 %s", a.Status, a.Body.Code, handler.CodeIdempotencyFlight)
					}
				})
			}
			wg.Wait()
			if firsts != 1 || len(orderIDs) != 1 {
				t.Fatalf("got %d first answers and order ids %v, want one purchase and one id", firsts, orderIDs)
			}
			var want string
			for id := range orderIDs {
				want = id
			}
			for i, h := range apps {
				a := replayUntilDone(t, h, vid, tok, key)
				if a.Status != http.StatusOK || !a.Replayed || string(a.Body.Data) != want {
					t.Errorf("retry on instance %d: got %d %s replayed=%v, want 200 %s replayed", i, a.Status, a.Body.Data, a.Replayed, want)
				}
			}
			if mode == "async" {
				apptest.WaitDrained(t, apps[1], vid, 1)
			}
			if _, orders := apptest.StockOf(t, vid); orders != 1 {
				t.Errorf("got %d orders in the database, want 1", orders)
			}

			other := apptest.PublishVoucher(t, apps[0], 10)
			if a := buyWithKey(t, apps[1], other, tok, key); a.Status != http.StatusUnprocessableEntity || a.Body.Code != handler.CodeIdempotencyReused {
				t.Errorf("same key, another voucher: got %d %s, want 422 %s", a.Status, a.Body.Code, handler.CodeIdempotencyReused)
			}
			tok2, _ := apptest.DevTokens().Issue(user+1, "user")
			if a := buyWithKey(t, apps[1], vid, tok2, key); a.Status != http.StatusOK || a.Replayed || string(a.Body.Data) == want {
				t.Errorf("another user's same key: got %d %s replayed=%v, want a purchase of their own", a.Status, a.Body.Data, a.Replayed)
			}
			if a := buyWithKey(t, apps[0], vid, tok, strings.Repeat("k", 256)); a.Status != http.StatusBadRequest || a.Body.Code != handler.CodeInvalidArgument {
				t.Errorf("256-character key: got %d %s, want 400 INVALID_ARGUMENT", a.Status, a.Body.Code)
			}
			if a := buyWithKey(t, apps[0], vid, tok, ""); a.Status != http.StatusConflict || a.Body.Code != handler.CodeDuplicateOrder {
				t.Errorf("no key, second purchase: got %d %s, want 409 DUPLICATE_ORDER", a.Status, a.Body.Code)
			}
		})
	}
}

// TestIdempotentRetryAfterRateLimit: an answer that says the purchase did
// not run is not kept. That answer is 429 RATE_LIMITED. The retry with the
// same key runs the purchase once the limit allows it.
func TestIdempotentRetryAfterRateLimit(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_RATE_LIMIT": "1"})
	vid, warm := apptest.PublishVoucher(t, a.Handler(), 5), apptest.PublishVoucher(t, a.Handler(), 5)
	tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	buyWithKey(t, a.Handler(), warm, tok, "") // spends the user's burst
	if r := buyWithKey(t, a.Handler(), vid, tok, "k1"); r.Status != http.StatusTooManyRequests {
		t.Fatalf("over the limit: got %d %s, want 429", r.Status, r.Body.Code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := buyWithKey(t, a.Handler(), vid, tok, "k1")
		if r.Status == http.StatusOK && !r.Replayed {
			break
		}
		if r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("retry: got %d %s replayed=%v, want 429 until a 200 that is no replay", r.Status, r.Body.Code, r.Replayed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIdempotentLostReply: the buyer's first attempt never gets its answer,
// in sync and async mode. Either the connection is cut after the purchase
// ran, or the client gives up while it runs. The retry with the same key
// tells the truth. It gets 200 with the order id of the purchase that
// happened. The order is in the database.
func TestIdempotentLostReply(t *testing.T) {
	tests := []struct {
		mode, loss string
	}{{"sync", "cut"}, {"sync", "client timeout"}, {"async", "cut"}}
	for _, tt := range tests {
		t.Run(tt.mode+" "+tt.loss, func(t *testing.T) {
			var inst *app.App
			if tt.mode == "sync" {
				inst = apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_DEV_CRITICAL_DELAY": "300ms"})
			} else {
				inst = apptest.StartAsync(t, nil)
			}
			var cut atomic.Bool
			cut.Store(tt.loss == "cut")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !cut.CompareAndSwap(true, false) {
					inst.Handler().ServeHTTP(w, r)
					return
				}
				// The purchase runs to its end. Its answer is lost.
				inst.Handler().ServeHTTP(httptest.NewRecorder(), r)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			}))
			t.Cleanup(srv.Close)
			vid := apptest.PublishVoucher(t, inst.Handler(), 5)
			tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
			send := func(timeout time.Duration) (*http.Response, error) {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/voucher-order/seckill/%d", srv.URL, vid), nil)
				req.Header.Set("authorization", "Bearer "+tok)
				req.Header.Set(handler.IdempotencyHeader, `"lost-reply"`)
				resp, err := srv.Client().Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return resp, err
			}
			first := 10 * time.Second
			if tt.loss == "client timeout" {
				first = 50 * time.Millisecond // inside the 300 ms critical section
			}
			if resp, err := send(first); err == nil {
				t.Fatalf("first attempt: got %d, want its answer lost", resp.StatusCode)
			} else if tt.loss == "client timeout" && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("first attempt: %v, want the client's deadline", err)
			}
			r := replayUntilDone(t, inst.Handler(), vid, tok, `"lost-reply"`)
			if r.Status != http.StatusOK || !r.Replayed {
				t.Fatalf("retry: got %d %s replayed=%v, want the first attempt's 200 replayed", r.Status, r.Body.Code, r.Replayed)
			}
			var orderID string
			if err := json.Unmarshal(r.Body.Data, &orderID); err != nil {
				t.Fatalf("order id %s: %v", r.Body.Data, err)
			}
			if tt.mode == "async" {
				apptest.WaitDrained(t, inst.Handler(), vid, 1)
			}
			o := apptest.Call(t, inst.Handler(), http.MethodGet, "/voucher-order/"+orderID, tok, nil)
			if o.Status != http.StatusOK {
				t.Errorf("the replayed order %s: got %d %s, want it in the database", orderID, o.Status, o.Body.Code)
			}
		})
	}
}
