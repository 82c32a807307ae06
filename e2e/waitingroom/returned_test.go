package waitingroom

import (
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
)

// TestUnitsGivenBackReopenRoom: stock 3, overbooking off, six buyers in
// line. The first three buy; the room says sold_out to the others and to a
// newcomer, but not finally (retryAfterMs). The three orders are cancelled
// (or left unpaid until the pay timeout): the room counts the units given
// back, admits the next three, who buy, and a buyer who joins once it
// reopened queues behind them. In sync and async mode; on the Redis
// Cluster with SECKILL_TEST_ON_CLUSTER=1.
func TestUnitsGivenBackReopenRoom(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		expire     bool
	}{
		{"sync cancel", "sync", false},
		{"sync pay timeout", "sync", true},
		{"async cancel", "async", false},
		{"async pay timeout", "async", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SECKILL_WAITING_ROOM_OVERBOOK": "1"}
			if tc.expire {
				if !privateExpiry(t, tc.mode, env) {
					return
				}
			} else if tc.mode == "sync" {
				maps.Copy(env, apptest.RedisVars(t))
			}
			apps := []http.Handler{apptest.StartMode(t, tc.mode, env).Handler(), apptest.StartMode(t, tc.mode, env).Handler()}
			unitsComeBack(t, newRoom(t, apps, 3, -time.Minute), tc.mode == "async", tc.expire)
		})
	}
}

// privateExpiry sets env for a test whose orders expire after 2 s: a
// database of its own, so that the apps' sweepers expire no other test's
// orders, and in async mode a private Redis too (its epoch is that
// database's). On the cluster the async case is skipped: the cluster is
// shared with the other packages' tests, and a second database's epoch
// there would make their apps rebuild.
func privateExpiry(t *testing.T, mode string, env map[string]string) bool {
	env["SECKILL_PAY_TIMEOUT"] = "2s"
	if mode == "sync" {
		maps.Copy(env, apptest.RedisVars(t))
		env["SECKILL_MYSQL_DSN"], _ = apptest.FreshDatabase(t)
		return true
	}
	if apptest.OnCluster() {
		t.Skip("async with a private database needs a private Redis: run without SECKILL_TEST_ON_CLUSTER")
		return false
	}
	m, _, dsn, _ := apptest.PrivateBackends(t)
	env["SECKILL_MYSQL_DSN"], env["SECKILL_REDIS_ADDR"] = dsn, m.Addr()
	return true
}

// unitsComeBack runs the test on r's voucher of 3 units.
func unitsComeBack(t *testing.T, r *room, async, expire bool) {
	us := users(6)
	r.joinAll(us)
	orders := map[int64]int64{}
	for i, u := range us[:3] {
		a := r.poll(i, u)
		if a.Status != model.RoomAdmitted {
			t.Fatalf("buyer %d: got %+v, want admitted (3 units, overbooking 1)", i+1, a)
		}
		orders[u] = r.buyOrder(i, u, a.Token)
	}
	for i, u := range append(us[3:], users(1)...) {
		if a := r.join(i, u); a.Status != model.RoomSoldOut || a.RetryAfterMs <= 0 {
			t.Fatalf("after the sell-out, joiner %d: got %+v, want sold_out with retryAfterMs > 0 (units may come back)", i+4, a)
		}
	}
	if async {
		apptest.WaitDrained(t, r.apps[0], r.vid, 3)
	}
	if expire {
		// The pay timeout is 2 s; the sweepers run every 200 ms.
		time.Sleep(2500 * time.Millisecond)
	} else {
		for i, u := range us[:3] {
			r.cancel(i, u, orders[u])
		}
	}

	// The next three in line are admitted, on either instance.
	deadline := time.Now().Add(10 * time.Second)
	toks := make([]string, 3)
	for i, u := range us[3:] {
		a := r.poll(i, u)
		for a.Status != model.RoomAdmitted && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			a = r.poll(i, u)
		}
		if a.Status != model.RoomAdmitted {
			_, w := r.audit()
			t.Fatalf("waiting buyer %d after the units came back: got %+v, want admitted (room %+v)", i+4, a, w)
		}
		toks[i] = a.Token
	}
	// The newcomer of the sell-out was not queued; one who joins now is.
	late := users(1)[0]
	if a := r.join(0, late); a.Status != model.RoomWaiting || a.Position == nil || *a.Position != 7 {
		t.Errorf("a joiner after the room reopened: got %+v, want waiting at position 7 (behind the six)", a)
	}
	for i, u := range us[3:] {
		r.buyOrder(i+1, u, toks[i])
	}
	if a := r.poll(1, late); a.Status != model.RoomSoldOut {
		t.Errorf("the late joiner after the second sell-out: got %+v, want sold_out", a)
	}
	want := int64(3)
	if async {
		apptest.WaitDrained(t, r.apps[0], r.vid, 3)
	}
	au, w := r.audit()
	if au.Orders != want || w.Purchased != 6 || w.Returned != 3 || w.State != model.RoomSoldOut {
		t.Errorf("audit: got %d live orders, room %+v, want 3 orders, 6 purchased, 3 returned, sold_out", au.Orders, w)
	}
}

// buyOrder buys on app i with the admission token and returns the order id;
// it fails the test on anything but 200.
func (r *room) buyOrder(i int, user int64, tok string) int64 {
	r.t.Helper()
	h := map[string]string{"Admission-Token": tok}
	code, res, _ := r.do(i, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", r.vid), user, h)
	if code != http.StatusOK {
		r.t.Fatalf("purchase of user %d: got %d %s %s, want 200", user, code, res.Body.Code, res.Body.ErrorMsg)
	}
	id, err := apptest.OrderIDOf(res)
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

// cancel cancels the user's order on app i, waiting while it is pending
// (async: not written yet).
func (r *room) cancel(i int, user, orderID int64) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, res, _ := r.do(i, http.MethodPost, fmt.Sprintf("/voucher-order/%d/cancel", orderID), user, nil)
		if code == http.StatusOK {
			return
		}
		if res.Body.Code != "ORDER_PENDING" || time.Now().After(deadline) {
			r.t.Fatalf("cancel order %d: got %d %s %s, want 200", orderID, code, res.Body.Code, res.Body.ErrorMsg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
