package bench

// Benchmarks of the seckill request through the whole HTTP handler, as
// the server calls it: `make bench-go`. docs/benchmark.md ("Per-request
// cost") lists them and says what they measure and what they do not.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
)

// benchApp wires an app from vars (config.Load), logging at warn into
// nothing, as `make bench` runs the server.
func benchApp(b *testing.B, vars map[string]string) *app.App {
	b.Helper()
	vars["SECKILL_HTTP_ADDR"] = "127.0.0.1:0"
	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		b.Fatalf("config: %v", err)
	}
	log := app.NewLogger(io.Discard, "warn")
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		b.Fatalf("app.New: %v", err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

// realBenchApp is benchApp on the real backends of .ci/env.sh, skipped
// without them. It runs in development mode, for the public development
// secret and /debug/noop.
func realBenchApp(b *testing.B, orderMode string, extra ...string) *app.App {
	b.Helper()
	dsn, redisAddr := apptest.IntegrationEnv(b)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_REDIS_ADDR": redisAddr, "SECKILL_ENV": "development",
		"SECKILL_ORDER_MODE": orderMode, "SECKILL_LOCK_MODE": "lua",
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return benchApp(b, vars)
}

// BenchmarkAdmissionEmbedded is the async admission on the embedded
// backends. The Lua script runs in the in-process Redis, so ns/op includes
// it (and no network).
//
// The embedded Redis follows the wall clock for TTLs (app/deps.go). It
// walks and sorts every key on every command to do so. Its commands then
// slow down with each key a run leaves: an order's record, a user's fencing
// counter. With that clock, ns/op grows with b.N. An admission took 2.6 ms
// once 2,600 orders were pending, and 0.3 ms without the sweep. The
// benchmark stops that clock to measure the request, not the sweep. No key
// expires meanwhile, and none needs to.
func BenchmarkAdmissionEmbedded(b *testing.B) {
	a := benchApp(b, map[string]string{"SECKILL_DATA_DIR": b.TempDir(), "SECKILL_ORDER_MODE": "async", "SECKILL_LOCK_MODE": "lua"})
	a.StopEmbeddedClock()
	benchAsync(b, a, false)
}

// BenchmarkAdmissionRedis is the async admission on the real Redis and
// MariaDB. ns/op of the serial forms includes a loopback round trip to
// Redis and Redis's own work.
func BenchmarkAdmissionRedis(b *testing.B) {
	benchAsync(b, realBenchApp(b, "async"), true)
}

// BenchmarkAdmissionRedisLimits is BenchmarkAdmissionRedis with purchase
// limits that no request reaches. Each request is a new user, from one
// address, with limits far above the rate. ns/op ÷
// BenchmarkAdmissionRedis's is what checking them costs.
func BenchmarkAdmissionRedisLimits(b *testing.B) {
	for _, tt := range []struct {
		name string
		vars []string
	}{
		{"voucher", []string{"SECKILL_RATE_LIMIT_VOUCHER=100000000"}},
		{"all", []string{"SECKILL_RATE_LIMIT=1000", "SECKILL_RATE_LIMIT_VOUCHER=100000000", "SECKILL_RATE_LIMIT_IP=100000000"}},
	} {
		b.Run(tt.name, func(b *testing.B) { benchAsync(b, realBenchApp(b, "async", tt.vars...), true) })
	}
}

// BenchmarkAdmissionSyncLua is sync mode with the `lua` lock on the real
// backends. Each order takes the per-user lock in Redis. Then it runs the
// order transaction in MariaDB.
func BenchmarkAdmissionSyncLua(b *testing.B) {
	a := realBenchApp(b, "sync")
	h := a.Handler()
	users := newBenchUsers()
	soldV := benchNoopAndSoldOut(b, h, users)
	v := benchVoucher(b, h)
	var ok atomic.Int64
	b.Run("order", func(b *testing.B) { ok.Add(benchSerial(b, h, benchBuy(v), http.StatusOK, users)) })
	b.Run("order-parallel", func(b *testing.B) { ok.Add(benchParallel(b, h, benchBuy(v), http.StatusOK, users)) })

	// Every 200 is an order, and nothing is left in flight. The audit finds
	// the voucher consistent.
	for _, c := range []struct {
		v      int64
		orders int64
	}{{soldV, 1}, {v, ok.Load()}} {
		r := syncAudit(b, h, c.v)
		if !r.Consistent || r.Orders != c.orders {
			b.Errorf("voucher %d after the benchmark: %+v, want consistent with %d orders", c.v, r, c.orders)
			continue
		}
		benchDelete(b, c.v)
	}
}

// benchAsync runs the sub-benchmarks of async mode on a, then drains and
// checks. real: on the real backends (their rows and keys are deleted
// afterwards).
func benchAsync(b *testing.B, a *app.App, real bool) {
	h := a.Handler()
	users := newBenchUsers()
	soldV := benchNoopAndSoldOut(b, h, users)
	v := benchVoucher(b, h)
	a.StopWorkers(time.Now().Add(9 * time.Second))
	var ok atomic.Int64
	b.Run("admit", func(b *testing.B) { ok.Add(benchSerial(b, h, benchBuy(v), http.StatusOK, users)) })
	b.Run("admit-parallel", func(b *testing.B) {
		ok.Add(benchParallel(b, h, benchBuy(v), http.StatusOK, users, func() func() { return benchCPU(b, a.Redis()) }))
	})

	// Drain with the consumers started again, then the invariants.
	if err := a.StartConsumers(context.Background()); err != nil {
		b.Fatalf("restarting the consumers: %v", err)
	}
	for _, c := range []struct {
		v      int64
		orders int64
	}{{soldV, 1}, {v, ok.Load()}} {
		r, took := benchDrained(b, h, c.v, c.orders)
		if !r.Consistent {
			b.Errorf("voucher %d after the drain: %+v, want consistent", c.v, r)
		}
		apptest.CheckInvariant5(b, a.Redis(), c.v, r)
		if c.orders > 1 {
			b.Logf("%d admitted orders drained %v after the last admission", c.orders, took.Round(time.Millisecond))
		}
		if real && !b.Failed() {
			benchDelete(b, c.v)
		}
	}
}

// benchTarget is the request of a sub-benchmark.
type benchTarget struct{ method, path string }

func benchBuy(voucherID int64) benchTarget {
	return benchTarget{method: http.MethodPost, path: "/voucher-order/seckill/" + strconv.FormatInt(voucherID, 10)}
}

// benchUsers hands out users never seen before, far from the ids other
// tests use, with their tokens.
type benchUsers struct{ next atomic.Int64 }

func newBenchUsers() *benchUsers {
	u := &benchUsers{}
	u.next.Store(apptest.RandomBase())
	return u
}

// tokens returns the authorization header values of n new users.
func (u *benchUsers) tokens(b *testing.B, n int) [][]string {
	b.Helper()
	tok := apptest.DevTokens()
	first := u.next.Add(int64(n)) - int64(n)
	out := make([][]string, n)
	for i := range out {
		s, err := tok.Issue(first+int64(i)+1, "user")
		if err != nil {
			b.Fatal(err)
		}
		out[i] = []string{s}
	}
	return out
}

// benchWriter is a reusable http.ResponseWriter that keeps the status and
// the body of the last response.
type benchWriter struct {
	header http.Header
	status int
	body   []byte
}

func newBenchWriter() *benchWriter { return &benchWriter{header: http.Header{}} }

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.status = 0
	w.body = w.body[:0]
}

// benchTally counts the answers that were not the expected one.
type benchTally struct {
	ok, unavailable, bad atomic.Int64
	first                atomic.Value // string: the first unexpected answer
}

func (t *benchTally) add(w *benchWriter, want int) {
	switch w.status {
	case want:
		t.ok.Add(1)
	case http.StatusServiceUnavailable:
		t.unavailable.Add(1)
	default:
		if t.bad.Add(1) == 1 {
			t.first.Store(fmt.Sprintf("%d %s", w.status, w.body))
		}
	}
}

// report fails b on unexpected answers and reports the 503s. It returns
// how many answers were the expected one.
func (t *benchTally) report(b *testing.B, want int) int64 {
	b.Helper()
	if n := t.bad.Load(); n > 0 {
		b.Fatalf("%d of %d answers were not %d; the first: %s", n, b.N, want, t.first.Load())
	}
	if n := t.unavailable.Load(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "503/op")
		b.Logf("%d of %d answers were 503 (another process froze the voucher?)", n, b.N)
	}
	return t.ok.Load()
}

// benchSerial sends b.N requests one after the other, each as a new user,
// every answer expected to be want. It returns how many were.
func benchSerial(b *testing.B, h http.Handler, t benchTarget, want int, users *benchUsers) int64 {
	tokens := users.tokens(b, b.N)
	req := httptest.NewRequest(t.method, t.path, nil)
	w := newBenchWriter()
	var tally benchTally
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req.Header["Authorization"] = tokens[i]
		w.reset()
		h.ServeHTTP(w, req)
		tally.add(w, want)
	}
	b.StopTimer()
	return tally.report(b, want)
}

// benchParallelism × GOMAXPROCS goroutines send the requests of the
// -parallel forms. That is 32 on the bench machine's 2 cores, like make
// bench's wrk connections.
const benchParallelism = 16

// benchParallel is benchSerial from benchParallelism × GOMAXPROCS
// goroutines. Meters, each started with the timer, report when it stops.
func benchParallel(b *testing.B, h http.Handler, t benchTarget, want int, users *benchUsers, meters ...func() func()) int64 {
	tokens := users.tokens(b, b.N)
	var next atomic.Int64
	var tally benchTally
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	var stops []func()
	for _, m := range meters {
		stops = append(stops, m())
	}
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(t.method, t.path, nil)
		w := newBenchWriter()
		for pb.Next() {
			req.Header["Authorization"] = tokens[next.Add(1)-1]
			w.reset()
			h.ServeHTTP(w, req)
			tally.add(w, want)
		}
	})
	b.StopTimer()
	for _, stop := range stops {
		stop()
	}
	return tally.report(b, want)
}

// benchCPU starts counting CPU time. It returns the func that reports the
// CPU time spent per request, after the timed loop. It reports the
// process's (cpu-ns/op) and the Redis server's (redis-cpu-ns/op). Other
// processes sharing the cores disturb these far less than ns/op. The Redis
// figure counts every client of that server. It means something only on a
// Redis of one's own.
func benchCPU(b *testing.B, rdb redis.UniversalClient) func() {
	b.Helper()
	redisCPU := func() time.Duration {
		info, err := rdb.Info(context.Background(), "cpu").Result()
		if err != nil {
			return 0
		}
		var sum float64
		for line := range strings.Lines(info) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_user" || k == "used_cpu_sys" {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
		return time.Duration(sum * float64(time.Second))
	}
	self := func() time.Duration {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	p0, r0 := self(), redisCPU()
	return func() {
		p1, r1 := self(), redisCPU()
		b.ReportMetric(float64(p1-p0)/float64(b.N), "cpu-ns/op")
		if r0 > 0 && r1 > 0 {
			b.ReportMetric(float64(r1-r0)/float64(b.N), "redis-cpu-ns/op")
		}
	}
}

// benchVoucher publishes a voucher whose stock no benchmark run can spend
// (the largest the service accepts).
func benchVoucher(b *testing.B, h http.Handler) int64 {
	b.Helper()
	return apptest.PublishVoucher(b, h, 100_000_000)
}

// benchNoopAndSoldOut runs the noop and soldout sub-benchmarks. The sold-out
// voucher is one of stock 1 bought beforehand by a new user. It returns
// that voucher.
func benchNoopAndSoldOut(b *testing.B, h http.Handler, users *benchUsers) int64 {
	b.Helper()
	var noopNS atomic.Int64
	b.Run("noop", func(b *testing.B) {
		benchSerial(b, h, benchTarget{method: http.MethodGet, path: "/debug/noop"}, http.StatusOK, users)
		noopNS.Store(b.Elapsed().Nanoseconds() / int64(b.N))
	})
	v := apptest.PublishVoucher(b, h, 1)
	tok := users.tokens(b, 1)[0][0]
	if r := apptest.Call(b, h, http.MethodPost, benchBuy(v).path, tok, nil); r.Status != http.StatusOK {
		b.Fatalf("buying the only voucher of %d: got %d %s, want 200", v, r.Status, r.Body.Code)
	}
	b.Run("soldout", func(b *testing.B) {
		benchSerial(b, h, benchBuy(v), http.StatusConflict, users)
		if n := noopNS.Load(); n > 0 {
			b.ReportMetric(float64(n)/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "rate/noop")
		}
	})
	return v
}

// benchDrained is waitDrained for a stream of a hundred thousand entries on
// a busy machine. The audit scans the whole stream. An answer 503 means the
// request's deadline passed meanwhile. It is asked again, not a failure.
func benchDrained(b *testing.B, h http.Handler, v, want int64) (apptest.AuditResult, time.Duration) {
	b.Helper()
	admin := apptest.AdminToken(b, h)
	start := time.Now()
	for {
		r := apptest.Call(b, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", v), admin, nil)
		var a apptest.AuditResult
		switch {
		case r.Status == http.StatusServiceUnavailable:
		case r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &a) != nil || a.RedisStock == nil || a.Pending == nil:
			b.Fatalf("audit of %d: got %d %s %s, want 200 with redisStock and pending", v, r.Status, r.Body.Code, r.Body.Data)
		case *a.Pending == 0 && a.Orders == want:
			return a, time.Since(start)
		}
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("voucher %d not drained after 2 min: last audit %d %s, want %d orders and none pending", v, r.Status, r.Body.Data, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncAuditResult is what BenchmarkAdmissionSyncLua reads of the audit.
type syncAuditResult struct {
	Orders     int64 `json:"orders"`
	Consistent bool  `json:"consistent"`
}

// syncAudit reads the audit endpoint of a sync-mode app.
func syncAudit(b *testing.B, h http.Handler, v int64) syncAuditResult {
	b.Helper()
	admin := apptest.AdminToken(b, h)
	r := apptest.Call(b, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", v), admin, nil)
	var a syncAuditResult
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &a) != nil {
		b.Fatalf("audit of %d: got %d %s %s", v, r.Status, r.Body.Code, r.Body.Data)
	}
	return a
}

// benchDelete removes a voucher of the real backends with its shop, orders,
// order outcomes and Redis keys. A benchmark run writes up to a few hundred
// thousand orders.
func benchDelete(b *testing.B, v int64) {
	b.Helper()
	db := apptest.OpenDB(b)
	ctx := context.Background()
	var shop int64
	if err := db.QueryRowContext(ctx, "SELECT shop_id FROM tb_voucher WHERE id = ?", v).Scan(&shop); err != nil {
		b.Errorf("voucher %d: %v", v, err)
		return
	}
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{"DELETE o FROM tb_order_outcome o JOIN tb_voucher_order vo ON vo.id = o.order_id WHERE vo.voucher_id = ?", v},
		{"DELETE FROM tb_voucher_order WHERE voucher_id = ?", v},
		{"DELETE FROM tb_seckill_voucher WHERE voucher_id = ?", v},
		{"DELETE FROM tb_voucher WHERE id = ?", v},
		{"DELETE FROM tb_shop WHERE id = ?", shop},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.arg); err != nil {
			b.Errorf("deleting voucher %d: %v", v, err)
		}
	}
	_, redisAddr := apptest.IntegrationEnv(b)
	rdb := redisstore.NewRedisClient(redisAddr, redisstore.RedisAuth{})
	defer rdb.Close()
	if err := rdb.Del(ctx, redisstore.StockKey(v), redisstore.BuyersKey(v), redisstore.VoucherKey(v),
		redisstore.DuplicateRejectionsKey(v), redisstore.LiveKey(v)).Err(); err != nil {
		b.Errorf("deleting the keys of voucher %d: %v", v, err)
	}
}
