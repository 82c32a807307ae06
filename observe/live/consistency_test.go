package live

import (
	"context"
	"testing"
	"time"

	"seckill/model"
	"seckill/observe/live/livetest"
)

// TestLatencyOfFastAnswers: answers refused from memory take microseconds.
// They all fall in the first bucket, (0, 0.25] ms. The quantiles must sit
// where those answers are, not at the bucket's middle: p50 was 0.126 ms
// over a mean of 0.011 ms.
func TestLatencyOfFastAnswers(t *testing.T) {
	rec := NewRecorder()
	for i := range 1000 {
		rec.Observe(1, "SOLD_OUT", NotDuplicate, time.Duration(6000+8*i)*time.Nanosecond) // 6 to 14 µs
	}
	for range 30 {
		rec.Observe(1, "OK", NotDuplicate, 3*time.Millisecond)
	}
	v, _ := rec.vouchers.Load(int64(1))
	l := latency(v.(*counters).values())
	if l == nil || l.Count != 1030 {
		t.Fatalf("latency: got %+v, want 1030 answers", l)
	}
	if l.P50 > l.Mean || l.P50 < 0.006 || l.P50 > 0.014 {
		t.Errorf("p50 %.3f ms with a mean of %.3f ms: want it among the answers (0.006 to 0.014 ms), below the mean", l.P50, l.Mean)
	}
	if l.Mean < 0.09 || l.Mean > 0.105 {
		t.Errorf("mean: got %.3f ms, want about 0.097", l.Mean)
	}
	if !(l.P50 <= l.P95 && l.P95 <= l.P99) || l.P99 < 2.5 || l.P99 > 5 {
		t.Errorf("quantiles out of order or p99 outside (2.5, 5] ms: %+v", l)
	}
}

// TestLatencyWithoutBucketSums: an older instance publishes no bucket sums.
// Its answers are spread over their buckets' bounds, as before.
func TestLatencyWithoutBucketSums(t *testing.T) {
	var d [nFields]int64
	d[nCodes+nDups+2] = 100 // bucket (0.5, 1] ms
	d[nFields-1] = 75_000   // µs
	l := latency(d)
	if l == nil || l.P50 != 0.75 || l.Mean != 0.75 {
		t.Errorf("latency: got %+v, want p50 and mean 0.75 ms", l)
	}
}

// TestInstanceRateOverTheWindow: an instance's rate in the table is taken
// over the same window as the tiles. An instance that published twice in
// a quarter second, the second time with no new request, showed 0/s while
// the tile said 100/s.
func TestInstanceRateOverTheWindow(t *testing.T) {
	store, clk := livetest.New(), newClock()
	b := NewBoard(store, (&stubAudit{a: &model.Audit{VoucherID: 5}}).audit, clk.Now)
	ctx := context.Background()
	publish := func(requests, ok int64) {
		t.Helper()
		in := model.LiveInstance{ID: "a", LockMode: "lua", OrderMode: "sync", Seen: clk.Now(), Requests: requests, Vouchers: []int64{5}}
		var d map[int64]model.LiveCounts
		if ok > 0 {
			d = map[int64]model.LiveCounts{5: {"code:OK": ok, "lat:0": ok}}
		}
		if err := store.Publish(ctx, in, d); err != nil {
			t.Fatal(err)
		}
	}
	publish(0, 0)
	v := b.View(5)
	defer v.Close()
	if _, err := v.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 8 { // 100 requests a second for two seconds
		clk.Add(250 * time.Millisecond)
		publish(25*int64(clk.Now().Sub(newClock().Now())/(250*time.Millisecond)), 25)
		if clk.Now().Sub(newClock().Now())%time.Second == 0 {
			v.Next(ctx)
		}
	}
	clk.Add(250 * time.Millisecond)
	publish(200, 0) // the traffic stopped a moment ago
	s := v.Next(ctx)
	if s.RequestsPerSecond == nil || len(s.Instances) != 1 || s.Instances[0].RequestsPerSecond == nil {
		t.Fatalf("snapshot: got rate %v, instances %+v", s.RequestsPerSecond, s.Instances)
	}
	tile, row := *s.RequestsPerSecond, *s.Instances[0].RequestsPerSecond
	if row < 80 || tile < 80 {
		t.Errorf("requests per second: tile %.1f, instance %.1f; want both about 100, over the same window", tile, row)
	}
}

// TestSnapshotPairsAuditWithCounters: a snapshot's orders (the audit) and
// its OK answers (the counters) are read moments apart. The audit it starts
// is waited for, so a burst between two snapshots shows in both. Orders 17
// beside 150 OK answers was seen: the audit of the second before.
func TestSnapshotPairsAuditWithCounters(t *testing.T) {
	store, clk := livetest.New(), newClock()
	ctx := context.Background()
	audit := func(ctx context.Context, id int64) (*model.Audit, error) {
		c, err := store.Counts(ctx, id)
		return &model.Audit{VoucherID: id, Orders: c["code:OK"], Consistent: true}, err
	}
	b := NewBoard(store, audit, clk.Now)
	publish := func(ok int64) {
		in := model.LiveInstance{ID: "a", LockMode: "lua", OrderMode: "sync", Seen: clk.Now()}
		if err := store.Publish(ctx, in, map[int64]model.LiveCounts{5: {"code:OK": ok}}); err != nil {
			t.Fatal(err)
		}
	}
	publish(17)
	v := b.View(5)
	defer v.Close()
	if _, err := v.Start(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	publish(133) // a burst: 150 OK in all
	s := v.Next(ctx)
	if s.Audit == nil || s.Audit.Orders != s.Answers["OK"] {
		t.Errorf("snapshot after a burst: orders %v beside %d OK answers, want the same moment's", s.Audit, s.Answers["OK"])
	}
}
