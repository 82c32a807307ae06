package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestFencingRefusesStaleHolder: holder A (instance 1, paused 900ms inside
// the critical section, lease 300ms) loses its lease; holder B (instance 2,
// no pause) takes lock:order:<user> and writes; then A resumes and writes.
// With SECKILL_FENCING=on A's older token is refused in the order
// transaction; with fencing off A's write goes through while B also held
// the lock (two holders wrote).
func TestFencingRefusesStaleHolder(t *testing.T) {
	tests := []struct {
		fencing    string
		wantStatus int
		wantOrders int // orders of A's voucher after A resumes
	}{
		{"on", http.StatusConflict, 0},
		{"off", http.StatusOK, 1},
	}
	for _, tt := range tests {
		t.Run("fencing="+tt.fencing, func(t *testing.T) {
			base := map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_LOCK_TTL": "300ms", "SECKILL_FENCING": tt.fencing}
			slow := map[string]string{"SECKILL_DEV_CRITICAL_DELAY": "900ms"}
			for k, v := range base {
				slow[k] = v
			}
			a1, a2 := testApp(t, slow), testApp(t, base)
			v1, v2 := publishVoucher(t, a1.Handler, 5), publishVoucher(t, a1.Handler, 5)
			tok, _ := devTokens().Issue(randomBase(), "user")

			done := make(chan apiResult, 1)
			go func() {
				done <- call(t, a1.Handler, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v1), tok, nil)
			}()
			time.Sleep(500 * time.Millisecond) // A holds the lock, its 300ms lease has lapsed
			rb := call(t, a2.Handler, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v2), tok, nil)
			if rb.Status != http.StatusOK {
				t.Fatalf("holder B: got %d %s, want 200 (A's lease had expired)", rb.Status, rb.Body.Code)
			}
			ra := <-done
			if ra.Status != tt.wantStatus {
				t.Errorf("stale holder A: got %d %s, want %d", ra.Status, ra.Body.Code, tt.wantStatus)
			}
			_, orders := stockOf(t, v1)
			if orders != tt.wantOrders {
				t.Errorf("voucher of A: got %d orders, want %d", orders, tt.wantOrders)
			}
			stale := counterValue(t, a1, "seckill_stale_fence_rejections_total")
			if want := float64(1 - tt.wantOrders); stale != want {
				t.Errorf("stale-fence metric: got %v, want %v", stale, want)
			}
		})
	}
}
