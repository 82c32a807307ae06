package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"seckill/config"
)

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
	admin := adminToken(t, a.Handler)
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
