package async

import (
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestAsyncPublishAfterDatabaseReset: the database is reset (a fresh one)
// while Redis keeps its data. In its first life a voucher of 3 sold out to
// 3 buyers. In the second, the first voucher published gets the same id,
// with 5 units. Redis still holds the old sale under that id: sold out, its
// buyers marked. Publishing sees a state that is not the new voucher's and
// rebuilds it from the facts, so the new voucher sells its 5 units, to the
// old buyers too, and no more. Loaded as it stood, it would sell nothing.
func TestAsyncPublishAfterDatabaseReset(t *testing.T) {
	m, _, dsn, _ := apptest.PrivateBackends(t)
	base := apptest.RandomBase()
	var oldID int64
	t.Run("first life", func(t *testing.T) {
		a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn})
		oldID = apptest.PublishVoucher(t, a.Handler(), 3)
		if got := apptest.Storm(t, []http.Handler{a.Handler()}, oldID, base, 3, 1); got.ByCode["OK"] != 3 {
			t.Fatalf("first life: got %v, want 3 OK", got.ByCode)
		}
		apptest.WaitDrained(t, a.Handler(), oldID, 3)
	})
	if t.Failed() {
		return
	}

	dsn2, db2 := apptest.FreshDatabase(t)
	a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn2})
	vid := apptest.PublishVoucherWith(t, a.Handler(), 5, map[string]any{"endTime": time.Now().Add(2 * time.Hour).Format(time.RFC3339)})
	if vid != oldID {
		t.Fatalf("the reset database gave voucher id %d, want the first life's %d (the case under test)", vid, oldID)
	}
	// The first life's 3 buyers and 5 new ones: 5 units.
	got := apptest.Storm(t, []http.Handler{a.Handler()}, vid, base, 8, 1)
	if got.ByCode["OK"] != 5 || got.ByCode["SOLD_OUT"] != 3 {
		t.Errorf("second life: got %v, want 5 OK and 3 SOLD_OUT", got.ByCode)
	}
	au, _ := apptest.WaitDrained(t, a.Handler(), vid, int64(got.ByCode["OK"]))
	if n := apptest.CheckInvariants(t, db2, vid, got); n != 5 {
		t.Errorf("second life: %d orders in the database, want 5", n)
	}
	if !au.Consistent || au.Oversold {
		t.Errorf("second life: audit %+v, want consistent, not oversold", au)
	}
}
