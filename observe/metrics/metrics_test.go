package metrics

import (
	"testing"
	"time"
)

// TestAdmissionRoundTrip: the admission pipelines' histogram gives the
// mean depth as sum ÷ count, with 1 for an admission sent alone. A nil
// *Metrics observes nothing.
func TestAdmissionRoundTrip(t *testing.T) {
	m := New()
	for _, n := range []int{1, 1, 16, 64, 3} {
		m.AdmissionRoundTrip(n)
	}
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "seckill_admission_pipeline_size" {
			continue
		}
		found = true
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 5 || h.GetSampleSum() != 85 {
			t.Errorf("count %d, sum %g; want 5 and 85", h.GetSampleCount(), h.GetSampleSum())
		}
		want := map[float64]uint64{1: 2, 2: 2, 4: 3, 8: 3, 16: 4, 32: 4, 64: 5}
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() != want[b.GetUpperBound()] {
				t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
			}
		}
	}
	if !found {
		t.Fatal("seckill_admission_pipeline_size is not registered")
	}
	var none *Metrics
	none.AdmissionRoundTrip(3) // no panic
	f := none.AdmissionRoundTrip
	f(1)
}

// TestLifecycleMetrics: the order lifecycle's events reach their series.
func TestLifecycleMetrics(t *testing.T) {
	all := New()
	m := Lifecycle{all}
	m.OrderPaid()
	m.OrderCancelled()
	m.OrderCancelled()
	m.OrdersExpired(5)
	m.GivebacksOwed(7)
	m.GivebacksDone(6)
	m.SweepDone(20*time.Millisecond, 3)
	m.SweepDone(time.Millisecond, 1)
	m.SweepFailed()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"seckill_orders_paid_total": 1, "seckill_orders_cancelled_total": 2, "seckill_orders_expired_total": 5,
		"seckill_givebacks_owed_total": 7, "seckill_givebacks_done_total": 6,
		"seckill_expiry_sweep_batches_total": 4, "seckill_expiry_sweep_errors_total": 1,
		"seckill_expiry_sweep_duration_seconds": 2, // observations
	}
	for _, mf := range mfs {
		w, ok := want[mf.GetName()]
		if !ok {
			continue
		}
		delete(want, mf.GetName())
		got := mf.GetMetric()[0].GetCounter().GetValue()
		if h := mf.GetMetric()[0].GetHistogram(); h != nil {
			got = float64(h.GetSampleCount())
		}
		if got != w {
			t.Errorf("%s: got %g, want %g", mf.GetName(), got, w)
		}
	}
	for name := range want {
		t.Errorf("%s is not registered", name)
	}
}
