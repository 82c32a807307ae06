package apptest

// Storms of concurrent buyers and the invariants they must leave.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/audit"
)

func RandomBase() int64 { return 1_000_000 + rand.Int64N(1<<40) }

// StormResult is what the concurrent buyers saw.
type StormResult struct {
	ByCode   map[string]int
	OrderIDs map[int64]int64 // order id -> user id, from 200 responses
}

// UserTokens issues the development tokens of n users, ids base+1 to
// base+n, in order.
func UserTokens(t testing.TB, base int64, n int) []string {
	t.Helper()
	tok := DevTokens()
	tokens := make([]string, n)
	for i := range tokens {
		s, err := tok.Issue(base+int64(i)+1, "user")
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = s
	}
	return tokens
}

// Storm sends dup concurrent buy requests for each of users users (ids from
// base+1). It spreads them over the handlers (instances) round robin.
func Storm(t *testing.T, handlers []http.Handler, voucherID int64, base int64, users, dup int) StormResult {
	t.Helper()
	tokens := UserTokens(t, base, users)
	res := StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	path := fmt.Sprintf("/voucher-order/seckill/%d", voucherID)
	n := 0
	for u := 0; u < users; u++ {
		for d := 0; d < dup; d++ {
			h := handlers[n%len(handlers)]
			n++
			wg.Add(1)
			go func(u int) {
				defer wg.Done()
				<-start
				r := Call(t, h, http.MethodPost, path, tokens[u], nil)
				mu.Lock()
				defer mu.Unlock()
				if r.Status == http.StatusOK {
					id, err := OrderIDOf(r)
					if err != nil {
						t.Error(err)
						return
					}
					res.ByCode["OK"]++
					res.OrderIDs[id] = base + int64(u) + 1
					return
				}
				if r.Status != http.StatusConflict {
					t.Errorf("got status %d code %s, want 200 or 409", r.Status, r.Body.Code)
				}
				res.ByCode[r.Body.Code]++
			}(u)
		}
	}
	close(start)
	wg.Wait()
	return res
}

// OrderIDOf is the order id a purchase's 200 answers: a JSON string of
// digits.
func OrderIDOf(r Result) (int64, error) {
	var s string
	if err := json.Unmarshal(r.Body.Data, &s); err != nil {
		return 0, fmt.Errorf("order id %s is not a JSON string", r.Body.Data)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("order id %q is not a number", s)
	}
	return id, nil
}

// CheckInvariants reads the database and asserts invariants 1 to 4 of
// docs/contract.md for the voucher. It takes what the clients saw. The
// checker is the shared one: model.Facts, internal/Audit.
func CheckInvariants(t *testing.T, db *sql.DB, voucherID int64, seen StormResult) (orders int) {
	t.Helper()
	f, err := audit.ReadDB(context.Background(), db, voucherID)
	if err != nil {
		t.Fatal(err)
	}
	f.CheckAnnounced = true
	for id, u := range seen.OrderIDs {
		f.Announced = append(f.Announced, model.Announced{OrderID: id, UserID: u})
	}
	for _, v := range f.Violations() {
		t.Error(v)
	}
	return len(f.Orders)
}

// WaitDrained polls the audit until no order of the voucher is pending. The
// database must also hold want orders. It returns the drained audit and how
// long it took.
func WaitDrained(t testing.TB, h http.Handler, vid int64, want int64) (AuditResult, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		a := Audit(t, h, vid)
		if *a.Pending == 0 && a.Orders == want {
			return a, time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after 60s: %+v, pending %d, want %d orders", a, *a.Pending, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CheckInvariant5 asserts invariant 5 from a drained audit and the buyers
// set (the shared checker: model.Counts).
func CheckInvariant5(t testing.TB, rdb redis.UniversalClient, vid int64, a AuditResult) {
	t.Helper()
	buyers, err := audit.Buyers(context.Background(), rdb, vid)
	if err != nil {
		t.Fatal(err)
	}
	returned, err := audit.Returned(context.Background(), rdb, vid)
	if err != nil {
		t.Fatal(err)
	}
	c := model.Counts{InitialStock: int64(a.InitialStock), Stock: int64(a.Stock), Orders: a.Orders,
		Cancelled: a.Cancelled, DistinctUsers: a.Distinct,
		Async: &model.AsyncCounts{RedisStock: *a.RedisStock, Pending: *a.Pending, Buyers: &buyers, Returned: &returned}}
	for _, v := range c.Violations() {
		if v.Invariant == 5 {
			t.Error(v)
		}
	}
}

func StockOf(t *testing.T, vid int64) (stock, orders int) {
	t.Helper()
	db := OpenDB(t)
	if err := db.QueryRow("SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ?", vid).Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ?", vid).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	return stock, orders
}
