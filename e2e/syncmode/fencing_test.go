package syncmode

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestFencingRefusesStaleHolder: holder A (instance 1, paused 900ms inside
// the critical section, lease 300ms) loses its lease. Holder B (instance 2,
// no pause) takes lock:order:<user> and writes. Then A resumes and writes.
// With SECKILL_FENCING=on A's older token is refused in the order
// transaction. With fencing off A's write goes through while B also held
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
			a1, a2 := apptest.Start(t, slow), apptest.Start(t, base)
			v1, v2 := apptest.PublishVoucher(t, a1.Handler(), 5), apptest.PublishVoucher(t, a1.Handler(), 5)
			tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")

			done := make(chan apptest.Result, 1)
			go func() {
				done <- apptest.Call(t, a1.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v1), tok, nil)
			}()
			time.Sleep(500 * time.Millisecond) // A holds the lock, its 300ms lease has lapsed
			rb := apptest.Call(t, a2.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v2), tok, nil)
			if rb.Status != http.StatusOK {
				t.Fatalf("holder B: got %d %s, want 200 (A's lease had expired)", rb.Status, rb.Body.Code)
			}
			ra := <-done
			if ra.Status != tt.wantStatus {
				t.Errorf("stale holder A: got %d %s, want %d", ra.Status, ra.Body.Code, tt.wantStatus)
			}
			_, orders := apptest.StockOf(t, v1)
			if orders != tt.wantOrders {
				t.Errorf("voucher of A: got %d orders, want %d", orders, tt.wantOrders)
			}
			stale := apptest.CounterValue(t, a1, "seckill_stale_fence_rejections_total")
			if want := float64(1 - tt.wantOrders); stale != want {
				t.Errorf("stale-fence metric: got %v, want %v", stale, want)
			}
		})
	}
}

// TestFencingUnderLoad: SECKILL_FENCING=on, with first-time users racing
// over two instances. The order transaction must never be a deadlock
// victim. Every request is answered 200 or 409, never 503. The invariants
// hold.
func TestFencingUnderLoad(t *testing.T) {
	for _, mode := range []string{"lua", "reentrant"} {
		t.Run(mode, func(t *testing.T) {
			env := map[string]string{"SECKILL_LOCK_MODE": mode, "SECKILL_FENCING": "on"}
			a1, a2 := apptest.Start(t, env), apptest.Start(t, env)
			db := apptest.OpenDB(t)
			const users, dup, stock = 400, 4, 250
			vid := apptest.PublishVoucher(t, a1.Handler(), stock)
			seen := apptest.Storm(t, []http.Handler{a1.Handler(), a2.Handler()}, vid, apptest.RandomBase(), users, dup)
			t.Logf("%s: outcomes %v", mode, seen.ByCode)
			if orders := apptest.CheckInvariants(t, db, vid, seen); orders != stock {
				t.Errorf("got %d orders, want the whole stock %d sold", orders, stock)
			}
		})
	}
}

// TestFencingTokenSpacesApart: fencing tokens of different lock modes are
// not comparable (a ZooKeeper czxid against a Redis counter). A user who
// bought under one mode must still be able to buy under another mode after
// a mode switch.
func TestFencingTokenSpacesApart(t *testing.T) {
	if os.Getenv("SECKILL_ZK_ADDRS") == "" {
		t.Skip("SECKILL_ZK_ADDRS not set")
	}
	zk := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "zookeeper", "SECKILL_FENCING": "on"})
	lu := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_FENCING": "on"})
	v1, v2 := apptest.PublishVoucher(t, zk.Handler(), 5), apptest.PublishVoucher(t, zk.Handler(), 5)
	tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	if r := apptest.Call(t, zk.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v1), tok, nil); r.Status != http.StatusOK {
		t.Fatalf("zookeeper mode: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if r := apptest.Call(t, lu.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", v2), tok, nil); r.Status != http.StatusOK {
		t.Errorf("lua mode after zookeeper mode: got %d %s, want 200 (a czxid must not fence a lua token)", r.Status, r.Body.Code)
	}
}
