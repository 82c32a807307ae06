package syncmode

import (
	"net/http"
	"testing"

	"seckill/app"
	"seckill/e2e/apptest"
)

// histogramOf reads a histogram of the app's metrics: its count and the
// observations above 1.
func histogramOf(t *testing.T, a *app.App, name string) (count, above1 uint64) {
	t.Helper()
	mfs, err := a.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			count += h.GetSampleCount()
			ones := uint64(0)
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == 1 {
					ones = b.GetCumulativeCount()
				}
			}
			above1 += h.GetSampleCount() - ones
		}
		return count, above1
	}
	t.Fatalf("metric %s not found", name)
	return 0, 0
}

// TestSyncGroupCommitUnderLoad: two instances with group commit on (the
// default). They sell a voucher to more buyers than it has units. Each user
// sends two requests at once. It runs for each lock mode that holds. The
// invariants hold and the whole stock is sold. Groups of more than one
// order formed (read from seckill_sync_group_size). A storm whose timing
// formed no group is followed by another, up to a bound.
func TestSyncGroupCommitUnderLoad(t *testing.T) {
	// redsync asks three Redis nodes for every lock: fewer buyers keep
	// its attempts within the request timeout on a loaded machine.
	tests := []struct {
		mode, fencing string
		users, stock  int
	}{
		{"lua", "off", 300, 200}, {"lua", "on", 300, 200}, {"redsync", "off", 60, 40}, {"mysql", "off", 300, 200},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"_fencing_"+tt.fencing, func(t *testing.T) {
			env := map[string]string{"SECKILL_LOCK_MODE": tt.mode, "SECKILL_FENCING": tt.fencing}
			a1, a2 := apptest.Start(t, env), apptest.Start(t, env)
			db := apptest.OpenDB(t)
			const dup = 2
			users, stock := tt.users, tt.stock
			var grouped uint64
			for round := 1; round <= 5 && grouped == 0; round++ {
				vid := apptest.PublishVoucher(t, a1.Handler(), stock)
				seen := apptest.Storm(t, []http.Handler{a1.Handler(), a2.Handler()}, vid, apptest.RandomBase(), users, dup)
				if orders := apptest.CheckInvariants(t, db, vid, seen); orders != stock {
					t.Errorf("round %d: got %d orders, want the whole stock %d sold", round, orders, stock)
				}
				if seen.ByCode["OK"] != stock {
					t.Errorf("round %d: got %d answers 200, want %d: %v", round, seen.ByCode["OK"], stock, seen.ByCode)
				}
				c1, g1 := histogramOf(t, a1, "seckill_sync_group_size")
				c2, g2 := histogramOf(t, a2, "seckill_sync_group_size")
				grouped = g1 + g2
				t.Logf("round %d: outcomes %v, commits %d, of which grouped %d", round, seen.ByCode, c1+c2, grouped)
			}
			if grouped == 0 {
				t.Error("no commit group of more than one order formed in 5 storms")
			}
			uk := apptest.CounterValue(t, a1, "seckill_unique_key_rejections_total") + apptest.CounterValue(t, a2, "seckill_unique_key_rejections_total")
			if uk != 0 {
				t.Errorf("got %v unique-key rejections, want 0 (the lock holds)", uk)
			}
		})
	}
}
