package waitingroom

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
)

// TestRoomAfterDatabaseReset: the database is replaced while Redis keeps
// its data. In the first life a voucher's room was closed by the admin.
// In the second, the first voucher published gets the same id, with a
// room of its own: its buyers join and are admitted, not told "closed" by
// the old sale's room, which the publish dropped.
func TestRoomAfterDatabaseReset(t *testing.T) {
	m, _, dsn, _ := apptest.PrivateBackends(t)
	var oldID int64
	t.Run("first life", func(t *testing.T) {
		a := apptest.Start(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn})
		r := newRoom(t, []http.Handler{a.Handler()}, 1, -time.Minute)
		oldID = r.vid
		us := users(2)
		r.joinAll(us)
		admin := apptest.AdminToken(t, a.Handler())
		if res := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher/seckill/%d/close", r.vid), admin, nil); res.Status != http.StatusOK {
			t.Fatalf("close: got %d %s", res.Status, res.Body.Code)
		}
		if got := r.poll(0, us[0]); got.Status != model.RoomClosed {
			t.Fatalf("first life after the close: got %+v, want closed", got)
		}
	})
	if t.Failed() {
		return
	}

	dsn2, _ := apptest.FreshDatabase(t)
	a := apptest.Start(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn2})
	r := newRoom(t, []http.Handler{a.Handler()}, 2, -time.Minute)
	if r.vid != oldID {
		t.Fatalf("the new database gave voucher id %d, want the first life's %d (the case under test)", r.vid, oldID)
	}
	us := users(2)
	for _, u := range us {
		if got := r.join(0, u); got.Status != model.RoomAdmitted {
			t.Errorf("second life: user %d joined: got %+v, want admitted", u, got)
		}
	}
	if code, c := r.buy(0, us[0], r.poll(0, us[0]).Token); code != http.StatusOK {
		t.Errorf("second life: purchase got %d %s, want 200", code, c)
	}
	if _, w := r.audit(); w.Joined != 2 || w.Purchased != 1 || w.State != "open" {
		t.Errorf("second life: room %+v, want 2 joined, 1 purchased, open", w)
	}
}
