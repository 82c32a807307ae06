package syncmode

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"seckill/config"
	"seckill/e2e/apptest"
)

// TestConcurrentSeckill is the concurrency test of the service: 250 users,
// each sending 4 requests at once, 100 units of stock.
func TestConcurrentSeckill(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	db := apptest.OpenDB(t)
	const users, dup, stock = 250, 4, 100
	vid := apptest.PublishVoucher(t, a.Handler(), stock)
	seen := apptest.Storm(t, []http.Handler{a.Handler()}, vid, apptest.RandomBase(), users, dup)
	t.Logf("outcomes: %v", seen.ByCode)
	orders := apptest.CheckInvariants(t, db, vid, seen)
	if orders != stock {
		t.Errorf("got %d orders, want the whole stock %d sold (250 distinct buyers)", orders, stock)
	}
	if got := seen.ByCode["OK"] + seen.ByCode["SOLD_OUT"] + seen.ByCode["DUPLICATE_ORDER"]; got != users*dup {
		t.Errorf("got %d answered requests, want %d: %v", got, users*dup, seen.ByCode)
	}
	admin := apptest.AdminToken(t, a.Handler())
	r := apptest.Call(t, a.Handler(), http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
	var audit struct {
		Orders              int64 `json:"orders"`
		DuplicateRejections int64 `json:"duplicateRejections"`
		Oversold            bool  `json:"oversold"`
		Consistent          bool  `json:"consistent"`
	}
	if err := json.Unmarshal(r.Body.Data, &audit); err != nil {
		t.Fatalf("audit: %v (%s)", err, r.Body.Data)
	}
	if audit.Orders != stock || audit.Oversold || !audit.Consistent || audit.DuplicateRejections != 0 {
		t.Errorf("audit: got %+v, want %d orders, consistent, no duplicate rejections", audit, stock)
	}
}

// TestLocalLockAcrossInstances shows the point of the local backend. Two
// instances are two wired apps on one database and Redis. Each has an
// in-process mutex. So one user's concurrent requests go through together.
// Only the database's unique key stops the second order. Lua does not.
//
// Whether two requests of one user meet in the database depends on the
// scheduler. So the local mode gets up to three storms, each with new users
// and a new voucher, to show it once; lua runs as many and never may.
func TestLocalLockAcrossInstances(t *testing.T) {
	tests := []struct {
		mode       string
		wantUKRejs bool
	}{
		{"local", true},
		{"lua", false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			env := map[string]string{"SECKILL_LOCK_MODE": tt.mode, "SECKILL_DEV_CRITICAL_DELAY": "30ms"}
			a1, a2 := apptest.Start(t, env), apptest.Start(t, env)
			db := apptest.OpenDB(t)
			const users, dup, stock, storms = 60, 2, 1000, 3
			var uk float64
			for storm := 1; storm <= storms && !t.Failed(); storm++ {
				vid := apptest.PublishVoucher(t, a1.Handler(), stock)
				seen := apptest.Storm(t, []http.Handler{a1.Handler(), a2.Handler()}, vid, apptest.RandomBase(), users, dup)
				orders := apptest.CheckInvariants(t, db, vid, seen)
				uk = apptest.CounterValue(t, a1, "seckill_unique_key_rejections_total") + apptest.CounterValue(t, a2, "seckill_unique_key_rejections_total")
				t.Logf("%s, storm %d: orders %d, outcomes %v, unique-key rejections so far %v", tt.mode, storm, orders, seen.ByCode, uk)
				if orders != users {
					t.Errorf("storm %d: got %d orders, want one per user (%d)", storm, orders, users)
				}
				if tt.wantUKRejs && uk > 0 {
					break
				}
			}
			if tt.wantUKRejs && uk == 0 {
				t.Errorf("local across two instances: got 0 unique-key rejections in %d storms, want > 0 (duplicates reaching the database)", storms)
			}
			if !tt.wantUKRejs && uk != 0 {
				t.Errorf("lua across two instances: got %v unique-key rejections, want 0", uk)
			}
		})
	}
}

// TestEveryLockModeServes switches the service between all ten lock modes.
// Each one serves a small storm with every invariant holding. The storm is
// 30 users, 3 requests each, stock 20.
func TestEveryLockModeServes(t *testing.T) {
	for _, mode := range config.LockModes {
		t.Run(mode, func(t *testing.T) {
			a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": mode})
			if got := a.Locker().Name(); got != mode {
				t.Fatalf("locker: got %q, want %q", got, mode)
			}
			db := apptest.OpenDB(t)
			vid := apptest.PublishVoucher(t, a.Handler(), 20)
			seen := apptest.Storm(t, []http.Handler{a.Handler()}, vid, apptest.RandomBase(), 30, 3)
			if orders := apptest.CheckInvariants(t, db, vid, seen); orders != 20 {
				t.Errorf("got %d orders, want 20 (stock sold out to 30 buyers)", orders)
			}
		})
	}
}

// TestRateLimit: two instances on one Redis with SECKILL_RATE_LIMIT=5 and
// SECKILL_RATE_LIMIT_VOUCHER=20. One user's 40 purchases go at once,
// alternately to both. At most 5 + 5 per second elapsed pass the limiter. A
// per-instance limiter would let 10 through at once.
// TestPurchaseLimitsAcrossInstances in repository/redisstore shows it. 120
// users' purchases of one voucher pass at most 20 + 20 per second elapsed
// times. The rest are 429 RATE_LIMITED. Without limits nothing is.
func TestRateLimit(t *testing.T) {
	const perUser, perVoucher = 5, 20
	for _, limited := range []bool{true, false} {
		t.Run(fmt.Sprintf("limited=%v", limited), func(t *testing.T) {
			env := map[string]string{"SECKILL_LOCK_MODE": "lua"}
			if limited {
				env["SECKILL_RATE_LIMIT"] = strconv.Itoa(perUser)
				env["SECKILL_RATE_LIMIT_VOUCHER"] = strconv.Itoa(perVoucher)
			}
			apps := []http.Handler{apptest.Start(t, env).Handler(), apptest.Start(t, env).Handler()}
			tok := apptest.DevTokens()
			burst := func(vid int64, users []int64, n int) (passed int, elapsed time.Duration) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for i := range n {
					token, err := tok.Issue(users[i%len(users)], "user")
					if err != nil {
						t.Fatal(err)
					}
					wg.Go(func() {
						r := apptest.Call(t, apps[i%2], http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case r.Status == http.StatusTooManyRequests && r.Body.Code == "RATE_LIMITED":
						case r.Status == http.StatusOK || r.Status == http.StatusConflict:
							passed++
						default:
							t.Errorf("got %d %s, want 200, 409 or 429 RATE_LIMITED", r.Status, r.Body.Code)
						}
					})
				}
				wg.Wait()
				return passed, time.Since(start)
			}
			// At most burst + rate × elapsed pass (GCRA), plus one for a
			// refill at the edge.
			bound := func(n int, d time.Duration) int { return n + int(float64(n)*d.Seconds()) + 1 }

			vid := apptest.PublishVoucher(t, apps[0], 1000)
			passed, elapsed := burst(vid, []int64{apptest.RandomBase()}, 8*perUser)
			switch {
			case limited && passed > bound(perUser, elapsed):
				t.Errorf("one user over two instances: %d passed in %v, want at most %d", passed, elapsed, bound(perUser, elapsed))
			case limited && passed < perUser:
				t.Errorf("one user: %d passed, want at least the burst %d", passed, perUser)
			case !limited && passed != 8*perUser:
				t.Errorf("no limits: %d of %d passed, want all", passed, 8*perUser)
			}

			vid = apptest.PublishVoucher(t, apps[0], 1000)
			users := make([]int64, 6*perVoucher)
			base := apptest.RandomBase()
			for i := range users {
				users[i] = base + int64(i)
			}
			passed, elapsed = burst(vid, users, len(users))
			switch {
			case limited && passed > bound(perVoucher, elapsed):
				t.Errorf("one voucher over two instances: %d passed in %v, want at most %d", passed, elapsed, bound(perVoucher, elapsed))
			case limited && passed < perVoucher-len(apps)*(perVoucher/10):
				// Each instance may lease up to a tenth of the burst, and a
				// lease may lapse unspent (docs/operations.md): that much of
				// the burst may be refused early.
				t.Errorf("one voucher: %d passed, want at least the burst %d less a lapsed lease per instance (%d)", passed, perVoucher, len(apps)*(perVoucher/10))
			case !limited && passed != len(users):
				t.Errorf("no limits: %d of %d passed, want all", passed, len(users))
			}
			t.Logf("limited=%v: voucher burst of %d: %d passed in %v", limited, len(users), passed, elapsed)
		})
	}
}
