package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// codes are the outcome codes counted, in the order of the summary: those of
// docs/contract.md, OTHER (an unexpected body) and TRANSPORT (no HTTP answer).
var codes = []string{
	"OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED",
	"VOUCHER_NOT_FOUND", "INVALID_ARGUMENT", "UNAUTHORIZED", "FORBIDDEN",
	"RATE_LIMITED", "UNAVAILABLE", "INTERNAL", "OTHER", "TRANSPORT",
}

// results collects outcomes from many goroutines.
type results struct {
	mu       sync.Mutex
	counts   map[string]int
	elapsed  []time.Duration
	orderIDs []string
}

func newResults() *results { return &results{counts: map[string]int{}} }

func (r *results) add(o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	known := false
	for _, c := range codes {
		if c == o.code {
			known = true
			break
		}
	}
	if known {
		r.counts[o.code]++
	} else {
		r.counts["OTHER"]++
	}
	if o.code != "TRANSPORT" {
		r.elapsed = append(r.elapsed, o.elapsed)
	}
	if o.code == "OK" {
		r.orderIDs = append(r.orderIDs, o.orderID)
	}
}

func (r *results) orderLines() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.orderIDs) == 0 {
		return ""
	}
	return strings.Join(r.orderIDs, "\n") + "\n"
}

// percentile returns the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted)) + 0.999999)
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// summary renders the KEY=VALUE lines the harness reads.
func (r *results) summary(elapsed time.Duration, violations int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.counts {
		n += c
	}
	sorted := append([]time.Duration(nil), r.elapsed...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	secs := elapsed.Seconds()
	rps := 0.0
	if secs > 0 {
		rps = float64(n) / secs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "purchases=%d\nseconds=%.3f\nrps=%.1f\n", n, secs, rps)
	fmt.Fprintf(&b, "p50_ms=%.1f\np95_ms=%.1f\np99_ms=%.1f\n",
		ms(percentile(sorted, 50)), ms(percentile(sorted, 95)), ms(percentile(sorted, 99)))
	fmt.Fprintf(&b, "driver_violations=%d\n", violations)
	for _, c := range codes {
		fmt.Fprintf(&b, "code_%s=%d\n", c, r.counts[c])
	}
	return b.String()
}

// runBurst gives each user one iteration: cfg.dups purchases, cfg.spacing
// apart, purchase i on base URL i mod n, sent without waiting for the
// answers in between. cfg.vus users are in flight at once.
func runBurst(ctx context.Context, cl *client, cfg config, users []user, voucherID string, res *results) {
	next := make(chan user)
	var wg sync.WaitGroup
	for range min(cfg.vus, len(users)) {
		wg.Go(func() {
			for u := range next {
				burstOne(ctx, cl, cfg, u, voucherID, res)
			}
		})
	}
	for _, u := range users {
		select {
		case next <- u:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
}

func burstOne(ctx context.Context, cl *client, cfg config, u user, voucherID string, res *results) {
	var wg sync.WaitGroup
	for i := range cfg.dups {
		if i > 0 && cfg.spacing > 0 {
			t := time.NewTimer(cfg.spacing)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			break
		}
		base := cfg.baseURLs[i%len(cfg.baseURLs)]
		wg.Go(func() {
			o := cl.buy(ctx, base, voucherID, u.token)
			res.add(o)
			if o.code == "OK" {
				cfg.life.after(ctx, cl, base, o.orderID, u.token)
			}
		})
	}
	wg.Wait()
}

// runRandom sends cfg.iterations purchases (default users*dups), each by a
// random user on a random base URL, from cfg.vus workers.
func runRandom(ctx context.Context, cl *client, cfg config, users []user, voucherID string, res *results) {
	total := int64(cfg.iterations)
	if total == 0 {
		total = int64(len(users) * cfg.dups)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range cfg.vus {
		wg.Go(func() {
			for sent.Add(1) <= total && ctx.Err() == nil {
				u := users[rand.IntN(len(users))]
				base := cfg.baseURLs[rand.IntN(len(cfg.baseURLs))]
				o := cl.buy(ctx, base, voucherID, u.token)
				res.add(o)
				if o.code == "OK" {
					cfg.life.after(ctx, cl, base, o.orderID, u.token)
				}
			}
		})
	}
	wg.Wait()
}
