package payments

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestNotifyLoadMeasure (make bench-pay-notify): notifications for 5,000
// paid orders, each sent twice at once over HTTP to two instances
// (copy one to the first, copy two to the second), 64 at a time; each
// order must end paid once. Beside it, in the same run, 5,000 purchases
// over HTTP to the same two instances at the same concurrency. It writes
// the figures to SECKILL_PAY_NOTIFY_RESULTS; without it the test skips.
func TestNotifyLoadMeasure(t *testing.T) {
	out := os.Getenv("SECKILL_PAY_NOTIFY_RESULTS")
	if out == "" {
		t.Skip("SECKILL_PAY_NOTIFY_RESULTS is empty: `make bench-pay-notify` sets it")
	}
	const orders, workers = 5000, 64
	be := newBackends(t, "sync")
	a1 := startPayApp(t, "sync", be, time.Hour, nil)
	a2 := startPayApp(t, "sync", be, time.Hour, nil)
	vid := publish(t, a1.h, orders)
	base := apptest.RandomBase()

	// The orders, their trades, paid at the provider without a notification.
	type paid struct {
		provider, outTradeNo string
		note                 message
	}
	items := make([]paid, orders)
	parallel(orders, workers, func(i int) {
		b := buy(t, a1.h, vid, base+int64(i))
		p := providers[i%2]
		c := mustPay(t, a1.h, b, p)
		fakePay(t, p, c.OutTradeNo, "none", false)
		items[i] = paid{provider: p, outTradeNo: c.OutTradeNo, note: fakeNotification(t, p, c.OutTradeNo, nil)}
	})
	before := apptest.CounterValue(t, a1.App, "seckill_orders_paid_total") + apptest.CounterValue(t, a2.App, "seckill_orders_paid_total")

	// Each notification twice at once: copy one to a1, copy two to a2.
	urls := []string{a1.url, a2.url}
	var failed atomic.Int64
	notify := timed(2*orders, workers, func(i int) {
		it := items[i/2]
		status, body := send(urls[i%2]+"/pay/notify/"+it.provider, it.note)
		if status/100 != 2 || (it.provider == "alipay" && body != "success") {
			failed.Add(1)
		}
	})
	after := apptest.CounterValue(t, a1.App, "seckill_orders_paid_total") + apptest.CounterValue(t, a2.App, "seckill_orders_paid_total")
	audit := audit(t, a1.h, vid)
	if after-before != orders || audit.Paid != orders || failed.Load() != 0 || !audit.Consistent {
		t.Errorf("paid %v (counters), %d (database), %d failed answers, consistent %v; want %d paid once, 0 failed",
			after-before, audit.Paid, failed.Load(), audit.Consistent, orders)
	}

	// The purchase, same run, same instances, same concurrency.
	vid2 := publish(t, a1.h, orders)
	base2 := apptest.RandomBase()
	tokens := make([]string, orders)
	for i := range tokens {
		var err error
		if tokens[i], err = apptest.DevTokens().Issue(base2+int64(i), "user"); err != nil {
			t.Fatal(err)
		}
	}
	var bought atomic.Int64
	purchase := timed(orders, workers, func(i int) {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/voucher-order/seckill/%d", urls[i%2], vid2), nil)
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				bought.Add(1)
			}
		}
	})
	if bought.Load() != orders {
		t.Errorf("purchases: %d of %d answered 200", bought.Load(), orders)
	}
	write(t, out, notify, purchase, orders, workers)
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// run is one timed run: its wall time and each call's latency.
type run struct {
	wall time.Duration
	lat  []time.Duration
}

func (r run) rate() float64 { return float64(len(r.lat)) / r.wall.Seconds() }

func (r run) quantile(q float64) time.Duration {
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// timed is parallel that measures each call.
func timed(n, workers int, f func(i int)) run {
	lat := make([]time.Duration, n)
	start := time.Now()
	parallel(n, workers, func(i int) {
		t0 := time.Now()
		f(i)
		lat[i] = time.Since(t0)
	})
	return run{wall: time.Since(start), lat: lat}
}

// send posts a notification; status 0 when it was not answered.
func send(target string, n message) (int, string) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(n.body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header = n.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// write puts the figures in the results file, with the machine, the date
// and the command.
func write(t *testing.T, path string, notify, purchase run, orders, workers int) {
	t.Helper()
	var b bytes.Buffer
	load, _ := os.ReadFile("/proc/loadavg")
	cpu, _ := exec.Command("sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").Output()
	fmt.Fprintf(&b, "# Pay notifications under load\n\nWritten by `make bench-pay-notify` (TestNotifyLoadMeasure, e2e/payments) on %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04:05 UTC"))
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s; load average at the end %s. MariaDB and Redis of `.ci/env.sh`, the fake providers of `tools/cmd/fakepay`.\n\n",
		runtime.NumCPU(), strings.TrimSpace(string(cpu)), runtime.Version(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Fprintf(&b, "%d orders paid at the providers (half Alipay, half WeChat Pay), their notifications sent twice at once over HTTP, copy one to instance 1, copy two to instance 2, %d in flight; then, in the same run, %d purchases (sync mode) over HTTP to the same instances at the same concurrency.\n\n", orders, workers, orders)
	fmt.Fprintf(&b, "| requests | count | per second | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
	for _, r := range []struct {
		name string
		run  run
	}{{"notifications (each applied once)", notify}, {"purchases", purchase}} {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s |\n", r.name, len(r.run.lat), r.run.rate(),
			ms(r.run.quantile(0.5)), ms(r.run.quantile(0.99)), ms(r.run.quantile(1)))
	}
	fmt.Fprintf(&b, "\nNotifications per second ÷ purchases per second: %.2f.\n", notify.rate()/purchase.rate())
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
