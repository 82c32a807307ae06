package main

// Helpers shared by the root package's end-to-end tests: the wired apps on
// the real backends, requests through the API, storms of buyers and the
// invariants of docs/contract.md.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/config"
	auditdb "seckill/internal/audit"
	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service"
)

// integrationEnv returns the real MySQL DSN and Redis address, skipping the
// test when they are not set (failing instead when CI=true).
func integrationEnv(t testing.TB) (dsn, redisAddr string) {
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
		// The shared database holds other tests' unpaid orders: only the
		// lifecycle tests, on databases of their own, let orders expire.
		"SECKILL_PAY_TIMEOUT": sharedPayTimeout,
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
	registerAppDB(t, a)
	return a
}

// asyncApp is testApp in async mode with the app's log kept and shown when
// the test fails.
func asyncApp(t *testing.T, env map[string]string) *app {
	t.Helper()
	a, err := startAsyncApp(t, env)
	if err != nil {
		t.Fatalf("newApp: %v", err)
	}
	return a
}

// startAsyncApp is asyncApp returning the start-up error.
func startAsyncApp(t *testing.T, env map[string]string) (*app, error) {
	t.Helper()
	dsn, _ := integrationEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_HTTP_ADDR": "127.0.0.1:0",
		"SECKILL_ORDER_MODE": "async", "SECKILL_LOCK_MODE": "lua",
		"SECKILL_ENV":         "development", // real backends default to production
		"SECKILL_PAY_TIMEOUT": sharedPayTimeout,
	}
	maps.Copy(vars, redisVars(t))
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	buf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := newApp(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	registerAppDB(t, a)
	t.Cleanup(func() {
		a.Close(log)
		if t.Failed() {
			t.Logf("app log (last 8 KiB):\n%s", tail(buf.Bytes(), 8192))
		}
	})
	return a, nil
}

// sharedPayTimeout is the pay timeout of the test apps unless a test sets
// one: 30 years, so that no app expires another test's orders, not even
// the repository tests' orders made in 2001 to expire under their own
// sweeps while this package runs beside them.
const sharedPayTimeout = "262800h"

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// onCluster reports whether the shared-Redis integration tests run on the
// Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS (SECKILL_TEST_ON_CLUSTER=1:
// `make test-cluster`) instead of the Redis of SECKILL_REDIS_ADDR.
func onCluster() bool { return os.Getenv("SECKILL_TEST_ON_CLUSTER") == "1" }

// redisVars are the Redis settings of an app on the shared Redis: the one
// of SECKILL_REDIS_ADDR, or the cluster (onCluster).
func redisVars(t testing.TB) map[string]string {
	t.Helper()
	_, redisAddr := integrationEnv(t)
	if !onCluster() {
		return map[string]string{"SECKILL_REDIS_ADDR": redisAddr}
	}
	addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	if addrs == "" {
		t.Fatal("SECKILL_TEST_ON_CLUSTER=1 needs SECKILL_TEST_CLUSTER_ADDRS (.ci/env.sh)")
	}
	return map[string]string{"SECKILL_REDIS_ADDR": "", "SECKILL_REDIS_CLUSTER_ADDRS": addrs}
}

// sharedRedis is a client of the Redis the apps of redisVars use, closed
// when the test ends.
func sharedRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	v := redisVars(t)
	if addrs := v["SECKILL_REDIS_CLUSTER_ADDRS"]; addrs != "" {
		c := redisstore.NewClusterRedisClient(strings.Split(addrs, ","), redisstore.RedisAuth{})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := redisstore.NewRedisClient(v["SECKILL_REDIS_ADDR"], redisstore.RedisAuth{})
	t.Cleanup(func() { c.Close() })
	return c
}

func testRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redisstore.NewRedisClient(addr, redisstore.RedisAuth{})
	t.Cleanup(func() { c.Close() })
	return c
}

func openTestDB(t testing.TB) *sql.DB {
	t.Helper()
	dsn, _ := integrationEnv(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
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

func call(t testing.TB, h http.Handler, method, path, token string, body any) apiResult {
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

// appDBs maps the handler of a test app on a database of its own (the
// embedded one) to that database (registerAppDB).
var appDBs sync.Map

// registerAppDB makes adminToken find a's database from a.Handler until the
// test ends.
func registerAppDB(t testing.TB, a *app) {
	appDBs.Store(a.Handler, a.deps.DB)
	t.Cleanup(func() { appDBs.Delete(a.Handler) })
}

// appAdmins maps a handler that fronts a server of the test's own (not an
// app of this process) to an admin token of that server's database.
var appAdmins sync.Map

var sharedAdmin struct {
	once sync.Once
	tok  string
	err  error
}

// adminToken returns a token of the admin test user (the one `seckill
// tokens --count 1 --admin` makes): admin routes check its role in the
// database. The user is in the database of h's app when registered
// (registerAppDB), else in the shared MariaDB.
func adminToken(t testing.TB, h http.Handler) string {
	t.Helper()
	ensure := func(db *sqlstore.DB) (string, error) {
		us, err := sqlstore.NewUsers(db).EnsureUsers(context.Background(),
			[]string{service.LoadTestPhone(model.RoleAdmin, 1)}, model.RoleAdmin, func(int) string { return "admin_1" })
		if err != nil {
			return "", err
		}
		return devTokens().Issue(us[0].ID, model.RoleAdmin)
	}
	if h != nil && reflect.TypeOf(h).Comparable() {
		if tok, ok := appAdmins.Load(h); ok {
			return tok.(string)
		}
		if db, ok := appDBs.Load(h); ok {
			tok, err := ensure(db.(*sqlstore.DB))
			if err != nil {
				t.Fatalf("admin token: %v", err)
			}
			return tok
		}
	}
	dsn, _ := integrationEnv(t)
	sharedAdmin.once.Do(func() {
		db, err := sqlstore.OpenMySQL(context.Background(), dsn)
		if err != nil {
			sharedAdmin.err = err
			return
		}
		defer db.Close()
		if err := db.Migrate(context.Background()); err != nil {
			sharedAdmin.err = err
			return
		}
		sharedAdmin.tok, sharedAdmin.err = ensure(db)
	})
	if sharedAdmin.err != nil {
		t.Fatalf("admin token: %v", sharedAdmin.err)
	}
	return sharedAdmin.tok
}

func publishVoucher(t testing.TB, h http.Handler, stock int) int64 {
	t.Helper()
	return publishVoucherWith(t, h, stock, nil)
}

// publishVoucherWith is publishVoucher with more fields of the request
// (e.g. stockBuckets).
func publishVoucherWith(t testing.TB, h http.Handler, stock int, more map[string]any) int64 {
	t.Helper()
	admin := adminToken(t, h)
	body := map[string]any{
		"shopId": createShop(t, h), "title": "e2e", "payValue": 100, "actualValue": 200, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	}
	maps.Copy(body, more)
	r := call(t, h, http.MethodPost, "/voucher/seckill", admin, body)
	if r.Status != http.StatusOK {
		t.Fatalf("publish: got status %d code %s, want 200", r.Status, r.Body.Code)
	}
	id, err := strconv.ParseInt(string(r.Body.Data), 10, 64)
	if err != nil {
		t.Fatalf("publish: data %s is not a number", r.Body.Data)
	}
	return id
}

// createShop creates a shop through POST /shop (a voucher must name one)
// and returns its id.
func createShop(t testing.TB, h http.Handler) int64 {
	t.Helper()
	admin := adminToken(t, h)
	r := call(t, h, http.MethodPost, "/shop", admin, map[string]any{
		"name": "test shop", "typeId": 1, "address": "test street 1", "x": 120.15, "y": 30.28,
	})
	if r.Status != http.StatusOK {
		t.Fatalf("create shop: got status %d code %s, want 200", r.Status, r.Body.Code)
	}
	id, err := strconv.ParseInt(string(r.Body.Data), 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("create shop: data %s is not an id", r.Body.Data)
	}
	return id
}

// auditResult is the audit endpoint's data.
type auditResult struct {
	InitialStock int    `json:"initialStock"`
	Stock        int    `json:"stock"`
	Orders       int64  `json:"orders"`
	Unpaid       int64  `json:"unpaid"`
	Paid         int64  `json:"paid"`
	Cancelled    int64  `json:"cancelled"`
	Expired      int64  `json:"expired"`
	GivebacksDue *int64 `json:"givebacksDue"`
	Distinct     int64  `json:"distinctUsers"`
	DupRejs      int64  `json:"duplicateRejections"`
	Oversold     bool   `json:"oversold"`
	Consistent   bool   `json:"consistent"`
	RedisStock   *int64 `json:"redisStock"`
	Pending      *int64 `json:"pending"`
}

func audit(t testing.TB, h http.Handler, vid int64) auditResult {
	t.Helper()
	admin := adminToken(t, h)
	r := call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("audit: got %d %s, want 200", r.Status, r.Body.Code)
	}
	var a auditResult
	if err := json.Unmarshal(r.Body.Data, &a); err != nil {
		t.Fatalf("audit: %v (%s)", err, r.Body.Data)
	}
	if a.RedisStock == nil || a.Pending == nil {
		t.Fatalf("audit in async mode: got %s, want redisStock and pending", r.Body.Data)
	}
	return a
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

func randomBase() int64 { return 1_000_000 + rand.Int64N(1<<40) }

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
// docs/contract.md for the voucher, given what the clients saw (the shared
// checker: model.Facts, internal/audit).
func checkInvariants(t *testing.T, db *sql.DB, voucherID int64, seen stormResult) (orders int) {
	t.Helper()
	f, err := auditdb.ReadDB(context.Background(), db, voucherID)
	if err != nil {
		t.Fatal(err)
	}
	f.CheckAnnounced = true
	for id, u := range seen.orderIDs {
		f.Announced = append(f.Announced, model.Announced{OrderID: id, UserID: u})
	}
	for _, v := range f.Violations() {
		t.Error(v)
	}
	return len(f.Orders)
}

// waitDrained polls the audit until no order of the voucher is pending and
// the database holds want orders, and returns the drained audit and how
// long it took.
func waitDrained(t testing.TB, h http.Handler, vid int64, want int64) (auditResult, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		a := audit(t, h, vid)
		if *a.Pending == 0 && a.Orders == want {
			return a, time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after 60s: %+v, pending %d, want %d orders", a, *a.Pending, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkInvariant5 asserts invariant 5 from a drained audit and the buyers
// set (the shared checker: model.Counts).
func checkInvariant5(t testing.TB, rdb redis.UniversalClient, vid int64, a auditResult) {
	t.Helper()
	buyers, err := auditdb.Buyers(context.Background(), rdb, vid)
	if err != nil {
		t.Fatal(err)
	}
	returned, err := auditdb.Returned(context.Background(), rdb, vid)
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

func stockOf(t *testing.T, vid int64) (stock, orders int) {
	t.Helper()
	db := openTestDB(t)
	if err := db.QueryRow("SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ?", vid).Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ?", vid).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	return stock, orders
}
