package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"seckill/auth"
	"seckill/config"
)

// integrationEnv returns the real MySQL DSN and Redis address, skipping the
// test when they are not set (failing instead when CI=true).
func integrationEnv(t *testing.T) (dsn, redisAddr string) {
	t.Helper()
	dsn, redisAddr = os.Getenv("SECKILL_MYSQL_DSN"), os.Getenv("SECKILL_REDIS_ADDR")
	if dsn == "" || redisAddr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR must be set in CI")
		}
		t.Skip("SECKILL_MYSQL_DSN / SECKILL_REDIS_ADDR not set: source .ci/env.sh to run against real MariaDB and Redis")
	}
	return dsn, redisAddr
}

// testApp starts a wired app on the real backends with the given lock mode.
func testApp(t *testing.T, env map[string]string) *app {
	t.Helper()
	dsn, redisAddr := integrationEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN":     dsn,
		"SECKILL_REDIS_ADDR":    redisAddr,
		"SECKILL_REDLOCK_ADDRS": os.Getenv("SECKILL_REDLOCK_ADDRS"),
		"SECKILL_ZK_ADDRS":      os.Getenv("SECKILL_ZK_ADDRS"),
		"SECKILL_HTTP_ADDR":     "127.0.0.1:0",
		// Real backends default to production: the tests sign with the
		// public development secret and use the development delays.
		"SECKILL_ENV": "development",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newApp(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("newApp: %v", err)
	}
	t.Cleanup(func() { a.Close(log) })
	return a
}

type apiResult struct {
	Status int
	Body   struct {
		Success  bool            `json:"success"`
		Code     string          `json:"code"`
		ErrorMsg string          `json:"errorMsg"`
		Data     json.RawMessage `json:"data"`
	}
}

func call(t *testing.T, h http.Handler, method, path, token string, body any) apiResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var r apiResult
	r.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		t.Errorf("%s %s: body %q is not an envelope: %v", method, path, rec.Body.String(), err)
	}
	return r
}

func devTokens() *auth.Tokens { return auth.NewTokens(config.DevJWTSecret, time.Hour) }

func publishVoucher(t *testing.T, h http.Handler, stock int) int64 {
	t.Helper()
	admin, err := devTokens().Issue(1, "admin")
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, h, http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": 1, "title": "e2e", "payValue": 100, "actualValue": 200, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	})
	if r.Status != http.StatusOK {
		t.Fatalf("publish: got status %d code %s, want 200", r.Status, r.Body.Code)
	}
	id, err := strconv.ParseInt(string(r.Body.Data), 10, 64)
	if err != nil {
		t.Fatalf("publish: data %s is not a number", r.Body.Data)
	}
	return id
}

// stormResult is what the concurrent buyers saw.
type stormResult struct {
	byCode   map[string]int
	orderIDs map[int64]int64 // order id -> user id, from 200 responses
}

// storm sends dup concurrent buy requests for each of users users (ids from
// base+1), spreading them over the handlers (instances) round robin.
func storm(t *testing.T, handlers []http.Handler, voucherID int64, base int64, users, dup int) stormResult {
	t.Helper()
	tok := devTokens()
	tokens := make([]string, users)
	for i := range tokens {
		s, err := tok.Issue(base+int64(i)+1, "user")
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = s
	}
	res := stormResult{byCode: map[string]int{}, orderIDs: map[int64]int64{}}
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
				r := call(t, h, http.MethodPost, path, tokens[u], nil)
				mu.Lock()
				defer mu.Unlock()
				if r.Status == http.StatusOK {
					var s string
					if err := json.Unmarshal(r.Body.Data, &s); err != nil {
						t.Errorf("order id %s is not a JSON string", r.Body.Data)
						return
					}
					id, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						t.Errorf("order id %q is not a number", s)
						return
					}
					res.byCode["OK"]++
					res.orderIDs[id] = base + int64(u) + 1
					return
				}
				if r.Status != http.StatusConflict {
					t.Errorf("got status %d code %s, want 200 or 409", r.Status, r.Body.Code)
				}
				res.byCode[r.Body.Code]++
			}(u)
		}
	}
	close(start)
	wg.Wait()
	return res
}

// checkInvariants reads the database and asserts invariants 1 to 4 of
// docs/contract.md for the voucher, given what the clients saw.
func checkInvariants(t *testing.T, db *sql.DB, voucherID int64, seen stormResult) (orders int) {
	t.Helper()
	var initial, stock int
	if err := db.QueryRow("SELECT initial_stock, stock FROM tb_seckill_voucher WHERE voucher_id = ?", voucherID).Scan(&initial, &stock); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT id, user_id FROM tb_voucher_order WHERE voucher_id = ?", voucherID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inDB := map[int64]int64{}
	perUser := map[int64]int{}
	for rows.Next() {
		var id, user int64
		if err := rows.Scan(&id, &user); err != nil {
			t.Fatal(err)
		}
		inDB[id] = user
		perUser[user]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	orders = len(inDB)
	if orders > initial {
		t.Errorf("invariant 1: got %d orders, want ≤ initial stock %d (oversold)", orders, initial)
	}
	if orders != initial-stock {
		t.Errorf("invariant 2: got %d orders, want initial−stock = %d−%d = %d", orders, initial, stock, initial-stock)
	}
	for u, n := range perUser {
		if n > 1 {
			t.Errorf("invariant 3: user %d has %d orders, want 1", u, n)
		}
	}
	for id, u := range seen.orderIDs {
		if got, ok := inDB[id]; !ok || got != u {
			t.Errorf("invariant 4: 200 announced order %d of user %d, database has user %d (found %v)", id, u, got, ok)
		}
	}
	for id := range inDB {
		if _, ok := seen.orderIDs[id]; !ok {
			t.Errorf("invariant 4: order %d in the database was never announced by a 200", id)
		}
	}
	return orders
}

func openTestDB(t *testing.T) *sql.DB {
	t.Helper()
	dsn, _ := integrationEnv(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func randomBase() int64 { return 1_000_000 + rand.Int64N(1<<40) }

// TestConcurrentSeckill is the concurrency test of the service: 250 users,
// each sending 4 requests at once, 100 units of stock.
func TestConcurrentSeckill(t *testing.T) {
	a := testApp(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	db := openTestDB(t)
	const users, dup, stock = 250, 4, 100
	vid := publishVoucher(t, a.Handler, stock)
	seen := storm(t, []http.Handler{a.Handler}, vid, randomBase(), users, dup)
	t.Logf("outcomes: %v", seen.byCode)
	orders := checkInvariants(t, db, vid, seen)
	if orders != stock {
		t.Errorf("got %d orders, want the whole stock %d sold (250 distinct buyers)", orders, stock)
	}
	if got := seen.byCode["OK"] + seen.byCode["SOLD_OUT"] + seen.byCode["DUPLICATE_ORDER"]; got != users*dup {
		t.Errorf("got %d answered requests, want %d: %v", got, users*dup, seen.byCode)
	}
	admin, _ := devTokens().Issue(1, "admin")
	r := call(t, a.Handler, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
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

// TestLocalLockAcrossInstances shows the point of the local backend: two
// instances (two wired apps on one database and Redis) each with an
// in-process mutex let one user's concurrent requests through together, and
// only the database's unique key stops the second order; lua does not.
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
			a1, a2 := testApp(t, env), testApp(t, env)
			db := openTestDB(t)
			const users, dup, stock = 60, 2, 1000
			vid := publishVoucher(t, a1.Handler, stock)
			seen := storm(t, []http.Handler{a1.Handler, a2.Handler}, vid, randomBase(), users, dup)
			orders := checkInvariants(t, db, vid, seen)
			uk := counterValue(t, a1, "seckill_unique_key_rejections_total") + counterValue(t, a2, "seckill_unique_key_rejections_total")
			t.Logf("%s: orders %d, outcomes %v, unique-key rejections %v", tt.mode, orders, seen.byCode, uk)
			if orders != users {
				t.Errorf("got %d orders, want one per user (%d)", orders, users)
			}
			if tt.wantUKRejs && uk == 0 {
				t.Errorf("local across two instances: got 0 unique-key rejections, want > 0 (duplicates reaching the database)")
			}
			if !tt.wantUKRejs && uk != 0 {
				t.Errorf("lua across two instances: got %v unique-key rejections, want 0", uk)
			}
		})
	}
}

// counterValue reads a counter from the app's /metrics.
func counterValue(t *testing.T, a *app, name string) float64 {
	t.Helper()
	mfs, err := a.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestEveryLockModeServes switches the service between all ten lock modes:
// each one serves a small storm (30 users, 3 requests each, stock 20) with
// every invariant holding.
func TestEveryLockModeServes(t *testing.T) {
	for _, mode := range config.LockModes {
		t.Run(mode, func(t *testing.T) {
			a := testApp(t, map[string]string{"SECKILL_LOCK_MODE": mode})
			if got := a.Locker.Name(); got != mode {
				t.Fatalf("locker: got %q, want %q", got, mode)
			}
			db := openTestDB(t)
			vid := publishVoucher(t, a.Handler, 20)
			seen := storm(t, []http.Handler{a.Handler}, vid, randomBase(), 30, 3)
			if orders := checkInvariants(t, db, vid, seen); orders != 20 {
				t.Errorf("got %d orders, want 20 (stock sold out to 30 buyers)", orders)
			}
		})
	}
}

// TestRateLimit: with SECKILL_RATE_LIMIT=2 one user's burst of 10 requests
// gets at most 4 past the limiter (the burst spans at most two one-second
// windows) and the rest 429 RATE_LIMITED; without it nothing is limited.
func TestRateLimit(t *testing.T) {
	for _, limit := range []string{"2", ""} {
		t.Run("limit="+limit, func(t *testing.T) {
			a := testApp(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_RATE_LIMIT": limit})
			vid := publishVoucher(t, a.Handler, 5)
			tok, _ := devTokens().Issue(randomBase(), "user")
			limited := 0
			for i := 0; i < 10; i++ {
				r := call(t, a.Handler, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
				switch {
				case r.Status == http.StatusTooManyRequests && r.Body.Code == "RATE_LIMITED":
					limited++
				case r.Status == http.StatusOK || r.Status == http.StatusConflict:
				default:
					t.Errorf("got %d %s, want 200, 409 or 429 RATE_LIMITED", r.Status, r.Body.Code)
				}
			}
			if limit != "" && limited < 6 {
				t.Errorf("got %d rate-limited of 10, want ≥ 6", limited)
			}
			if limit == "" && limited != 0 {
				t.Errorf("no limit configured: got %d rate-limited, want 0", limited)
			}
		})
	}
}
