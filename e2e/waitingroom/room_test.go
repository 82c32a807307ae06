// Package waitingroom tests the waiting room (docs/waiting-room.md) on real
// MariaDB and Redis, over two app instances.
package waitingroom

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/redisstore"
)

// twoApps starts two instances on the shared Redis, or on the Redis
// Cluster with SECKILL_TEST_ON_CLUSTER=1 (the room's keys share the
// voucher's slot).
func twoApps(t *testing.T, env map[string]string) []http.Handler {
	vars := apptest.RedisVars(t)
	maps.Copy(vars, env)
	return []http.Handler{apptest.Start(t, vars).Handler(), apptest.Start(t, vars).Handler()}
}

// TestJoinTwiceAndDrawReplay: before the start each buyer joins twice, on
// both instances, and has no position; at the start the pool is drawn, both
// instances answer the same position, and sorting the pool by the audit's
// seed (model.DrawOrder) gives exactly those positions. A later joiner goes
// behind the pool.
func TestJoinTwiceAndDrawReplay(t *testing.T) {
	r := newRoom(t, twoApps(t, nil), 5, 3*time.Second)
	us := users(30)
	for i, u := range us {
		for k := range 2 {
			if a := r.join(i+k, u); a.Status != model.RoomWaiting || a.Position != nil || a.Ahead != nil {
				t.Fatalf("join %d of user %d before the start: got %+v, want waiting with no position", k+1, u, a)
			}
		}
	}
	if _, w := r.audit(); w == nil || w.Joined != int64(len(us)) || w.Seed != "" || w.State != "waiting" {
		t.Fatalf("audit before the start: got %+v, want %d joined, no seed shown, waiting", w, len(us))
	}
	waitUntil(r.begin)

	pos := map[int64]int64{}
	for i, u := range us {
		a, b := r.poll(i, u), r.poll(i+1, u)
		if a.Position == nil || b.Position == nil || *a.Position != *b.Position {
			t.Fatalf("user %d: instances answer %+v and %+v, want one position", u, a, b)
		}
		pos[u] = *a.Position
	}
	_, w := r.audit()
	if w.Seed == "" || w.Pool != int64(len(us)) || w.Joined != int64(len(us)) {
		t.Fatalf("audit after the draw: got %+v, want the seed, a pool of %d", w, len(us))
	}
	for k, u := range model.DrawOrder(w.Seed, us) {
		if pos[u] != int64(k+1) {
			t.Errorf("user %d: got position %d, the replay of the seed gives %d", u, pos[u], k+1)
		}
	}
	late := users(1)[0]
	if a := r.join(1, late); a.Position == nil || *a.Position != int64(len(us)+1) {
		t.Errorf("a joiner after the start: got %+v, want position %d", a, len(us)+1)
	}
}

// admittedBound checks the room's bound: the admissions still live
// (outstanding) plus those used (purchased) never exceed the stock the room
// was sized to times the overbooking factor.
func admittedBound(t *testing.T, w *model.RoomAudit, overbook float64) {
	t.Helper()
	if limit := int64(math.Floor(float64(w.Base) * overbook)); w.Outstanding+w.Purchased > limit {
		t.Errorf("outstanding %d + purchased %d > floor(%d × %.1f) = %d", w.Outstanding, w.Purchased, w.Base, overbook, limit)
	}
}

// TestAdmissionSizedToStock: with 5 units and the default factor 1.2, of 20
// joiners exactly the first 6 are admitted; purchases do not admit more
// while the admitted still cover the remaining units; the audit's bound
// holds after every step.
func TestAdmissionSizedToStock(t *testing.T) {
	r := newRoom(t, twoApps(t, nil), 5, -time.Minute)
	us := users(20)
	got := map[int64]answer{}
	for i, u := range us {
		got[u] = r.join(i, u)
		_, w := r.audit()
		admittedBound(t, w, 1.2)
	}
	for i, u := range us {
		a := r.poll(i, u)
		want := model.RoomWaiting
		if i < 6 {
			want = model.RoomAdmitted
		}
		if a.Status != want || (want == model.RoomAdmitted) != (a.Token != "") {
			t.Fatalf("joiner %d: got %+v, want %s", i+1, a, want)
		}
		if want == model.RoomWaiting && (a.Ahead == nil || *a.Ahead != int64(i-6)) {
			t.Errorf("joiner %d: got ahead %v, want %d", i+1, a.Ahead, i-6)
		}
		got[u] = a
	}
	for k := range 2 {
		if code, c := r.buy(k, us[k], got[us[k]].Token); code != http.StatusOK {
			t.Fatalf("admitted purchase: got %d %s, want 200", code, c)
		}
	}
	for i, u := range us {
		if a := r.poll(i, u); i >= 6 && a.Status != model.RoomWaiting {
			t.Errorf("joiner %d after 2 purchases: got %s, want waiting (4 admitted cover 3 units)", i+1, a.Status)
		}
	}
	au, w := r.audit()
	admittedBound(t, w, 1.2)
	if w.Admitted != 6 || w.Purchased != 2 || w.Outstanding != 4 || au.Orders != 2 {
		t.Errorf("audit: got %+v (orders %d), want 6 admitted, 2 purchased, 4 outstanding, 2 orders", w, au.Orders)
	}
}

// TestPurchaseNeedsAdmission: a purchase of a voucher with a room is 403
// NOT_ADMITTED without a token, with a forged, expired, another user's or
// another voucher's token; no order is written and the stock stays.
func TestPurchaseNeedsAdmission(t *testing.T) {
	apps := twoApps(t, nil)
	r := newRoom(t, apps, 3, -time.Minute)
	other := newRoom(t, apps, 3, -time.Minute)
	us := users(2)
	u := us[0]
	a := r.join(0, u)
	if a.Status != model.RoomAdmitted {
		t.Fatalf("first joiner: got %+v, want admitted", a)
	}
	adm := admissions()
	tests := []struct{ name, tok string }{
		{"none", ""},
		{"forged", a.Token[:len(a.Token)-2] + "xx"},
		{"garbage", "not-a-token"},
		{"expired", adm.Sign(u, r.vid, time.Now().Add(-time.Second))},
		{"another user's", adm.Sign(us[1], r.vid, time.Now().Add(time.Minute))},
		{"another voucher's", adm.Sign(u, other.vid, time.Now().Add(time.Minute))},
	}
	for i, tt := range tests {
		if code, c := r.buy(i, u, tt.tok); code != http.StatusForbidden || c != "NOT_ADMITTED" {
			t.Errorf("%s token: got %d %s, want 403 NOT_ADMITTED", tt.name, code, c)
		}
	}
	if au, _ := r.audit(); au.Orders != 0 || au.Stock != 3 {
		t.Fatalf("after the refusals: got %d orders, stock %d, want 0 and 3", au.Orders, au.Stock)
	}
	if code, c := r.buy(1, u, a.Token); code != http.StatusOK {
		t.Errorf("with the room's token: got %d %s, want 200", code, c)
	}
}

// TestLapsePassesSlotOn: an admission not used within its TTL (plus the
// longest pause between polls, here the TTL too: 2 s in all) lapses; its
// holder is told closed and its token refused, and the next joiner is
// admitted in its place.
func TestLapsePassesSlotOn(t *testing.T) {
	r := newRoom(t, twoApps(t, map[string]string{"SECKILL_WAITING_ROOM_TOKEN_TTL": "1s"}), 1, -time.Minute)
	us := users(3)
	first := r.join(0, us[0])
	if first.Status != model.RoomAdmitted || r.join(1, us[1]).Status != model.RoomWaiting {
		t.Fatalf("got first %+v, want the first admitted and the second waiting (1 unit: 1 admitted)", first)
	}
	r.join(0, us[2])
	time.Sleep(2100 * time.Millisecond)
	if a := r.poll(1, us[1]); a.Status != model.RoomAdmitted {
		t.Fatalf("second joiner after the first lapsed: got %+v, want admitted", a)
	}
	if a := r.poll(0, us[0]); a.Status != model.RoomClosed {
		t.Errorf("lapsed joiner: got %+v, want closed", a)
	}
	if code, c := r.buy(0, us[0], first.Token); code != http.StatusForbidden || c != "NOT_ADMITTED" {
		t.Errorf("purchase with a lapsed token: got %d %s, want 403 NOT_ADMITTED", code, c)
	}
	if _, w := r.audit(); w.Lapsed != 1 || w.Admitted != 2 || w.Outstanding != 1 {
		t.Errorf("audit: got %+v, want 1 lapsed, 2 admitted, 1 outstanding", w)
	}
}

// TestSoldOutClosesRoom: once the units are bought every poll and every
// new join answers sold_out.
func TestSoldOutClosesRoom(t *testing.T) {
	r := newRoom(t, twoApps(t, nil), 2, -time.Minute)
	us := users(6)
	r.joinAll(us)
	for i, u := range us[:2] {
		if code, c := r.buy(i, u, r.poll(i, u).Token); code != http.StatusOK {
			t.Fatalf("purchase %d: got %d %s, want 200", i+1, code, c)
		}
	}
	for i, u := range append(us[2:], users(1)...) {
		a := r.join(i, u)
		if a.Status != model.RoomSoldOut {
			t.Errorf("joiner %d after the sell-out: got %+v, want sold_out", i+3, a)
		}
	}
	au, w := r.audit()
	if au.Orders != 2 || w.Purchased != 2 || w.State != model.RoomSoldOut {
		t.Errorf("audit: got orders %d, room %+v, want 2 orders, 2 purchased, sold_out", au.Orders, w)
	}
}

// TestClosedByAdmin: a voucher the admin closes answers closed on every
// instance at once.
func TestClosedByAdmin(t *testing.T) {
	apps := twoApps(t, nil)
	r := newRoom(t, apps, 1, -time.Minute)
	us := users(3)
	r.joinAll(us)
	admin := apptest.AdminToken(t, apps[0])
	if res := apptest.Call(t, apps[0], http.MethodPost, fmt.Sprintf("/voucher/seckill/%d/close", r.vid), admin, nil); res.Status != http.StatusOK {
		t.Fatalf("close: got %d %s", res.Status, res.Body.Code)
	}
	for i, u := range us {
		for k := range 2 {
			if a := r.poll(i+k, u); a.Status != model.RoomClosed {
				t.Errorf("user %d on instance %d: got %+v, want closed", i+1, (i+k)%2, a)
			}
		}
	}
}

// TestRedisLostRoom: when Redis loses the room, a poll says join again
// (403 NOT_ADMITTED); the next join rebuilds the room sized to the stock
// the database holds, so the admissions never cover more than the stock;
// the purchase made before stays.
func TestRedisLostRoom(t *testing.T) {
	apps := twoApps(t, nil)
	r := newRoom(t, apps, 5, -time.Minute)
	us := users(12)
	r.joinAll(us)
	if code, c := r.buy(0, us[0], r.poll(0, us[0]).Token); code != http.StatusOK {
		t.Fatalf("purchase: got %d %s", code, c)
	}
	rdb := apptest.SharedRedis(t)
	keys := []string{redisstore.RoomKey(r.vid), redisstore.RoomPoolKey(r.vid), redisstore.RoomLineKey(r.vid),
		redisstore.RoomAdmittedKey(r.vid), redisstore.RoomDoneKey(r.vid)}
	for _, k := range keys {
		if err := rdb.Del(context.Background(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code, res, _ := r.do(1, http.MethodGet, fmt.Sprintf("/voucher-order/seckill/%d/queue", r.vid), us[5], nil); code != http.StatusForbidden || res.Body.Code != "NOT_ADMITTED" {
		t.Errorf("poll after the loss: got %d %s, want 403 NOT_ADMITTED (join again)", code, res.Body.Code)
	}
	for i, u := range us[1:] {
		r.join(i, u)
	}
	au, w := r.audit()
	if w.Base != 4 || w.Admitted != 4 || au.Orders != 1 {
		t.Errorf("rebuilt room: got %+v, orders %d, want base 4 (the database's stock), 4 admitted, 1 order", w, au.Orders)
	}
	admittedBound(t, w, 1.2)
}

// TestNoRoomSellsAsBefore: a voucher without a room sells with no token,
// and its queue routes are 400 INVALID_ARGUMENT.
func TestNoRoomSellsAsBefore(t *testing.T) {
	apps := twoApps(t, nil)
	r := &room{t: t, apps: apps, vid: apptest.PublishVoucher(t, apps[0], 1), toks: map[int64]string{}}
	u := users(1)[0]
	if code, c := r.buy(0, u, ""); code != http.StatusOK {
		t.Errorf("purchase without a room: got %d %s, want 200", code, c)
	}
	if code, res, _ := r.do(0, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d/queue", r.vid), u, nil); code != http.StatusBadRequest || res.Body.Code != "INVALID_ARGUMENT" {
		t.Errorf("join without a room: got %d %s, want 400 INVALID_ARGUMENT", code, res.Body.Code)
	}
}

// TestRoomSettingAndEdit: with SECKILL_WAITING_ROOM=on a voucher published
// without waitingRoom gets a room and one published with false does not;
// an edit before the start turns a room off, and the voucher's JSON says so.
func TestRoomSettingAndEdit(t *testing.T) {
	apps := twoApps(t, map[string]string{"SECKILL_WAITING_ROOM": "on"})
	admin := apptest.AdminToken(t, apps[0])
	begin := time.Now().Add(time.Hour)
	room := func(vid int64) bool {
		t.Helper()
		res := apptest.Call(t, apps[1], http.MethodGet, fmt.Sprintf("/voucher/seckill/%d", vid), "", nil)
		var v struct {
			WaitingRoom *bool `json:"waitingRoom"`
		}
		if res.Status != http.StatusOK || json.Unmarshal(res.Body.Data, &v) != nil || v.WaitingRoom == nil {
			t.Fatalf("voucher %d: got %d %s, want its waitingRoom", vid, res.Status, res.Body.Data)
		}
		return *v.WaitingRoom
	}
	window := map[string]any{"beginTime": begin.Format(time.RFC3339), "endTime": begin.Add(time.Hour).Format(time.RFC3339)}
	on := apptest.PublishVoucherWith(t, apps[0], 2, window)
	window["waitingRoom"] = false
	off := apptest.PublishVoucherWith(t, apps[0], 2, window)
	if !room(on) || room(off) {
		t.Fatalf("got rooms %v and %v, want true (the setting) and false (the body)", room(on), room(off))
	}
	edit := map[string]any{"title": "e2e", "subTitle": "", "rules": "", "payValue": 100, "actualValue": 200, "stock": 2,
		"beginTime": begin.Format(time.RFC3339), "endTime": begin.Add(time.Hour).Format(time.RFC3339), "waitingRoom": false}
	if res := apptest.Call(t, apps[0], http.MethodPut, fmt.Sprintf("/voucher/seckill/%d", on), admin, edit); res.Status != http.StatusOK {
		t.Fatalf("edit: got %d %s", res.Status, res.Body.Code)
	}
	if room(on) {
		t.Errorf("after the edit: got a room, want none")
	}
}

// TestInstanceGoneMidSale: the room lives in Redis. When one of two
// instances closes in the middle of the sale, the other answers its
// joiners the same places, and the sale ends with exactly the stock sold.
func TestInstanceGoneMidSale(t *testing.T) {
	vars := apptest.RedisVars(t)
	first := apptest.Start(t, vars)
	apps := []http.Handler{first.Handler(), apptest.Start(t, vars).Handler()}
	r := newRoom(t, apps, 3, -time.Minute)
	us := users(8)
	before := map[int64]answer{}
	for i, u := range us {
		before[u] = r.join(i, u)
	}
	if code, c := r.buy(0, us[0], before[us[0]].Token); code != http.StatusOK {
		t.Fatalf("purchase on the first instance: got %d %s", code, c)
	}
	first.Close()
	r.apps = apps[1:]
	for _, u := range us[1:] {
		a := r.poll(0, u)
		switch {
		case a.Status == model.RoomSoldOut:
		case a.Position == nil || *a.Position != *before[u].Position:
			t.Errorf("user %d on the survivor: got %+v, want position %d", u, a, *before[u].Position)
		}
		if a.Status == model.RoomAdmitted {
			if code, c := r.buy(0, u, a.Token); code != http.StatusOK && c != "SOLD_OUT" {
				t.Errorf("purchase on the survivor: got %d %s, want 200 or SOLD_OUT", code, c)
			}
		}
	}
	if au, w := r.audit(); au.Orders != 3 || w.Purchased != 3 || w.State != model.RoomSoldOut {
		t.Errorf("got %d orders, room %+v, want 3 orders, 3 purchased, sold_out", au.Orders, w)
	}
}
