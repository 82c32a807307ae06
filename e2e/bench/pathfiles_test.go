package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestMeasurePath serves what `make measure-path` measures. With
// SECKILL_MEASURE_PATH=baseline it sets up an app, sync and then async. It
// publishes a voucher and makes one warm-up purchase. That fills the
// voucher cache and the ID block. With SECKILL_MEASURE_PATH=request it does
// the same and then one more purchase. In async mode each purchase waits
// until the order is written and its entry acknowledged. It reads the
// database and Redis directly. The audit route would count as code the
// order crossed. The make target runs both under -coverprofile with
// -covermode=count. It lists the files whose counters grew: the code one
// request runs. Without the variable it skips.
func TestMeasurePath(t *testing.T) {
	phase := os.Getenv("SECKILL_MEASURE_PATH")
	if phase == "" {
		t.Skip("SECKILL_MEASURE_PATH not set (make measure-path)")
	}
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			a := apptest.StartMode(t, mode, map[string]string{"SECKILL_LOCK_MODE": "lua"})
			h := a.Handler() // once: the accessor is not part of the path
			vid := apptest.PublishVoucher(t, h, 5)
			// Ended afterwards, so the other run's start-up check sees the
			// same live vouchers.
			t.Cleanup(func() {
				if _, err := apptest.OpenDB(t).Exec("UPDATE tb_seckill_voucher SET end_time = NOW() - INTERVAL 1 SECOND WHERE voucher_id = ?", vid); err != nil {
					t.Error(err)
				}
			})
			path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
			buy := func() {
				t.Helper()
				tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
				r := apptest.Call(t, h, http.MethodPost, path, tok, nil)
				if r.Status != http.StatusOK {
					t.Fatalf("purchase: got %d %s", r.Status, r.Body.Code)
				}
				if mode == "async" {
					var id string
					if err := json.Unmarshal(r.Body.Data, &id); err != nil {
						t.Fatal(err)
					}
					waitAcknowledged(t, id)
				}
			}
			buy() // the warm-up
			if phase == "request" {
				buy()
			}
		})
	}
}

// waitAcknowledged waits until the async order id is written and its entry
// acknowledged. Then its order-info key is dropped. It reads the database
// and Redis directly.
func waitAcknowledged(t *testing.T, id string) {
	t.Helper()
	db := apptest.OpenDB(t)
	_, addr := apptest.IntegrationEnv(t)
	rdb := apptest.Redis(t, addr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 && rdb.Exists(t.Context(), "seckill:orderinfo:"+id).Val() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not written and acknowledged after 30s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
