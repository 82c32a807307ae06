package metrics

import "testing"

// TestAdmissionRoundTrip: the admission pipelines' histogram gives the
// mean depth as sum ÷ count, with 1 for an admission sent alone; a nil
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
