package syncmode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
)

// TestSyncOrderIDCollision: Redis loses the order-id sequence while two
// instances run. Here the key is deleted between their first purchases. So
// the second instance is handed an id already in use. The purchase is not a
// duplicate, and the lock is not to blame. The sequence is moved past the
// database's ids. The order is written under a fresh id (200). No
// unique-key rejection is counted.
func TestSyncOrderIDCollision(t *testing.T) {
	_, addr := apptest.IntegrationEnv(t)
	rdb := apptest.Redis(t, addr)
	ctx := context.Background()
	for try := 0; try < 5; try++ {
		a1 := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
		a2 := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
		vid := apptest.PublishVoucher(t, a1.Handler(), 10)
		key := "icr:order:" + time.Now().UTC().Format("2006:01:02")
		base := apptest.RandomBase()
		buy := func(a *app.App, user int64) (int64, apptest.Result) {
			tok, _ := apptest.DevTokens().Issue(user, "user")
			r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
			var s string
			if r.Status == http.StatusOK {
				if err := json.Unmarshal(r.Body.Data, &s); err != nil {
					t.Fatal(err)
				}
			}
			id, _ := strconv.ParseInt(s, 10, 64)
			return id, r
		}
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		first, r1 := buy(a1, base+1)
		if r1.Status != http.StatusOK {
			t.Fatalf("first purchase: got %d %s, want 200", r1.Status, r1.Body.Code)
		}
		if err := rdb.Del(ctx, key).Err(); err != nil { // Redis lost the sequence
			t.Fatal(err)
		}
		second, r2 := buy(a2, base+2)
		if second>>32 != first>>32 && r2.Status == http.StatusOK {
			continue // another second: no collision to show. Again
		}
		if r2.Status != http.StatusOK {
			t.Fatalf("second purchase, whose first id was taken: got %d %s, want 200", r2.Status, r2.Body.Code)
		}
		if second == first {
			t.Fatalf("second purchase: got order id %d, the first order's", second)
		}
		if uk := apptest.CounterValue(t, a2, "seckill_unique_key_rejections_total"); uk != 0 {
			t.Errorf("unique-key rejections: got %v, want 0 (an id collision is not a lock failure)", uk)
		}
		_, orders := apptest.StockOf(t, vid)
		if orders != 2 {
			t.Errorf("got %d orders, want 2", orders)
		}
		return
	}
	t.Skip("no two purchases within one second in 5 tries: no collision produced")
}
