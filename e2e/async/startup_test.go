package async

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
)

// TestAsyncStartupChecks: an instance starts on an intact Redis (same
// epoch). It rebuilds a voucher whose Redis state is stale and quiet. It
// trusts a voucher on sale, whose counts move while it checks. Buyers of
// that voucher get no 503 while the instance starts. Every invariant holds
// after the drain. Redis is an in-process miniredis and the database a
// fresh one. So no other test's vouchers or consumers take part.
func TestAsyncStartupChecks(t *testing.T) {
	m, rdb, dsn, db := apptest.PrivateBackends(t)
	env := map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn}
	a1 := apptest.StartAsync(t, env)
	ctx := context.Background()

	stale := apptest.PublishVoucher(t, a1.Handler(), 10)
	// A stale Redis stock (as after sync-mode sales since it was loaded):
	// three units fewer than the facts say.
	if err := rdb.Set(ctx, redisstore.StockKey(stale), 7, 0).Err(); err != nil {
		t.Fatal(err)
	}

	const stock = 100000
	onSale := apptest.PublishVoucher(t, a1.Handler(), stock)
	sl := steadySale(t, []http.Handler{a1.Handler()}, onSale, 3, 2*time.Millisecond) // a steady sale, not a flood of the in-process Redis
	time.Sleep(300 * time.Millisecond)                                               // the sale is under way
	apptest.StartAsync(t, env)                                                       // a second instance starts during the sale
	time.Sleep(200 * time.Millisecond)
	sl.end()

	if byStatus := sl.statuses(); byStatus[http.StatusServiceUnavailable] != 0 || byStatus[http.StatusOK] == 0 {
		t.Errorf("buyers during the start: got statuses %v, want only 200s, no 503", byStatus)
	}
	got, err := rdb.Get(ctx, redisstore.StockKey(stale)).Int64()
	if err != nil || got != 10 {
		t.Errorf("stale voucher after the start: got redis stock %d (%v), want 10 rebuilt from the facts", got, err)
	}
	a, _ := apptest.WaitDrained(t, a1.Handler(), onSale, int64(len(sl.seen.OrderIDs)))
	apptest.CheckInvariant5(t, rdb, onSale, a)
	apptest.CheckInvariants(t, db, onSale, sl.seen)
}

func jsonString(raw []byte, dst *string) error { return json.Unmarshal(raw, dst) }

// sale is a steady sale that runs until ended. workers goroutines each buy
// for new users one after another, pausing between purchases. They spread
// over the handlers round robin.
type sale struct {
	wg       sync.WaitGroup
	stop     atomic.Bool
	mu       sync.Mutex
	byStatus map[int]int
	seen     apptest.StormResult
}

// steadySale starts a sale of voucher vid.
func steadySale(t *testing.T, handlers []http.Handler, vid int64, workers int, pause time.Duration) *sale {
	t.Helper()
	s := &sale{byStatus: map[int]int{}, seen: apptest.StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}}
	base := apptest.RandomBase()
	tok := apptest.DevTokens()
	path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
	for w := 0; w < workers; w++ {
		s.wg.Add(1)
		go func(w int) {
			defer s.wg.Done()
			h := handlers[w%len(handlers)]
			for i := 0; !s.stop.Load(); i++ {
				user := base + int64(w*1_000_000+i)
				token, _ := tok.Issue(user, "user")
				r := apptest.Call(t, h, http.MethodPost, path, token, nil)
				s.mu.Lock()
				s.byStatus[r.Status]++
				if r.Status == http.StatusOK {
					var id string
					if err := jsonString(r.Body.Data, &id); err == nil {
						var n int64
						fmt.Sscan(id, &n) //nolint:errcheck // checked by the invariants after
						s.seen.OrderIDs[n] = user
					}
				}
				s.mu.Unlock()
				time.Sleep(pause)
			}
		}(w)
	}
	return s
}

// statuses returns a copy of the answers so far, by HTTP status.
func (s *sale) statuses() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byStatus)
}

// end stops the sale and waits for its workers.
func (s *sale) end() {
	s.stop.Store(true)
	s.wg.Wait()
}
