package bench

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/testkit/cpu"
)

// BenchmarkDrain measures the consumers alone. It runs on the real Redis
// and MariaDB of .ci/env.sh with the `lua` lock, and skips without them.
// b.N orders are admitted while the consumers are stopped (untimed). Then
// the consumers start, and the timer runs until every order is in the
// database. It reports orders/s and the process's CPU per order
// (getrusage). That CPU is the consumers', the drain poll's and the
// runtime's; nothing else runs. It also reports Redis's CPU per order (INFO
// cpu). Run it with a fixed count, e.g. `go test -run '^$' -bench Drain
// -benchtime 20000x ./e2e/bench/`. Any other consumer of group g1 on the
// same Redis takes entries too. That skews both figures, so run it alone.
func BenchmarkDrain(b *testing.B) {
	a := realBenchApp(b, "async")
	h := a.Handler()
	users := newBenchUsers()
	v := benchVoucher(b, h)
	a.StopWorkers(time.Now().Add(9 * time.Second))
	db := apptest.OpenDB(b)
	b.StopTimer()
	b.ResetTimer()

	// Admit b.N orders from 32 goroutines.
	tokens := users.tokens(b, b.N)
	var next atomic.Int64
	var tally benchTally
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			w := newBenchWriter()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, benchBuy(v).path, nil)
				req.Header["Authorization"] = tokens[i]
				w.reset()
				h.ServeHTTP(w, req)
				tally.add(w, http.StatusOK)
			}
		})
	}
	wg.Wait()
	want := tally.report(b, http.StatusOK)

	ctx := context.Background()
	cpu0, redis0 := processCPU(b), redisCPU(b, a)
	b.StartTimer()
	start := time.Now()
	if err := a.StartConsumers(ctx); err != nil {
		b.Fatalf("starting the consumers: %v", err)
	}
	for {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ?", v).Scan(&n); err != nil {
			b.Fatalf("count orders: %v", err)
		}
		if n >= want {
			break
		}
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("voucher %d: %d of %d orders written after 2 min", v, n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	b.StopTimer()
	cpu1, redis1 := processCPU(b), redisCPU(b, a)
	b.ReportMetric(float64(want)/took.Seconds(), "orders/s")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(want), "cpu-µs/order")
	b.ReportMetric(float64((redis1-redis0).Microseconds())/float64(want), "redis-µs/order")

	r, _ := benchDrained(b, h, v, want)
	if !r.Consistent {
		b.Errorf("voucher %d after the drain: %+v, want consistent", v, r)
	}
	apptest.CheckInvariant5(b, a.Redis(), v, r)
	if !b.Failed() {
		benchDelete(b, v)
	}
}

// processCPU is this process's CPU time so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	d, err := cpu.Self()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// redisCPU is the Redis server's CPU time so far.
func redisCPU(b *testing.B, a *app.App) time.Duration {
	b.Helper()
	d, err := cpu.Redis(context.Background(), a.Redis())
	if err != nil {
		b.Fatal(err)
	}
	return d
}
