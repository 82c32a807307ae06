package handler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"seckill/handler"
	"seckill/middleware"
	"seckill/observe/metrics"
)

// TestShedUnderSlowSale: a sale that does not answer holds the first
// purchases; those past the shedder's floor are answered at once with 503
// UNAVAILABLE and Retry-After, never reach the sale, and are counted. The
// held purchases then complete.
func TestShedUnderSlowSale(t *testing.T) {
	m := metrics.New()
	e := newEnv(t, func(d *handler.Deps) { d.ShedTarget = 250 * time.Millisecond; d.Metrics = m })
	release, inSale := holdSale(e)
	buy := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/voucher-order/seckill/5", nil)
		req.Header.Set("authorization", e.userTok)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}

	held := middleware.ShedFloor
	answers := make(chan *httptest.ResponseRecorder, held)
	var wg sync.WaitGroup
	for range held {
		wg.Add(1)
		go func() { defer wg.Done(); answers <- buy() }()
	}
	waitUntil(t, func() bool { return inSale.Load() == int64(held) })

	const excess = 40
	for i := range excess {
		rec := buy()
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("purchase %d past the floor: got %d %s, want 503", i+1, rec.Code, rec.Body)
		}
		r := response{status: rec.Code, body: rec.Body.String()}
		if err := json.Unmarshal(rec.Body.Bytes(), &r.fields); err != nil {
			t.Fatalf("body %q: %v", r.body, err)
		}
		assertError(t, r, http.StatusServiceUnavailable, handler.CodeUnavailable)
		if ra := rec.Header().Get("Retry-After"); ra != "1" && ra != "2" && ra != "3" {
			t.Errorf("Retry-After: got %q, want 1, 2 or 3", ra)
		}
	}
	if got := len(e.seck.buyCalls()); got != held {
		t.Errorf("sale's Buy calls: got %d, want %d (a shed purchase never reaches the sale)", got, held)
	}
	var shed dto.Metric
	if err := m.PurchasesShed.Write(&shed); err != nil {
		t.Fatal(err)
	}
	if got := shed.GetCounter().GetValue(); got != excess {
		t.Errorf("seckill_purchases_shed_total: got %v, want %d", got, excess)
	}

	close(release)
	wg.Wait()
	close(answers)
	for rec := range answers {
		if rec.Code != http.StatusOK {
			t.Errorf("held purchase: got %d %s, want 200", rec.Code, rec.Body)
		}
	}
	if rec := buy(); rec.Code != http.StatusOK {
		t.Errorf("a purchase once the queue cleared: got %d %s, want 200", rec.Code, rec.Body)
	}
}

// holdSale makes e's sale hold every purchase until release is closed;
// inSale counts the purchases it holds.
func holdSale(e *env) (release chan struct{}, inSale *atomic.Int64) {
	release, inSale = make(chan struct{}), new(atomic.Int64)
	e.seck.buy = func(ctx context.Context, userID, voucherID int64) (int64, error) {
		inSale.Add(1)
		<-release
		return 42, nil
	}
	return release, inSale
}

// TestShedOff: with no target every purchase reaches the sale.
func TestShedOff(t *testing.T) {
	e := newEnv(t)
	release, inSale := holdSale(e)
	n := middleware.ShedFloor + 40
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest(http.MethodPost, "/voucher-order/seckill/5", nil)
			req.Header.Set("authorization", e.userTok)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			codes <- rec.Code
		}()
	}
	waitUntil(t, func() bool { return inSale.Load() == int64(n) })
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("got %d, want 200", c)
		}
	}
}

// waitUntil polls cond; it fails the test when cond stays false for 30 s (a
// hang, not a measure).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30 s")
		}
	}
}
