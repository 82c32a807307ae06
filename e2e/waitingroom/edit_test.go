package waitingroom

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
)

// TestEditReachesEveryInstance: two instances have read a voucher without
// a room (a purchase before its start caches it on each). The admin turns
// the room on, on one of them, shortly before the start: at the start
// neither sells without an admission token. Then the admin closes the sale
// on the other one: an admitted buyer's purchase on the first is refused
// at once (not when its cached copy ages out, a minute later).
func TestEditReachesEveryInstance(t *testing.T) {
	apps := twoApps(t, nil)
	admin := apptest.AdminToken(t, apps[0])
	begin := time.Now().Add(4 * time.Second).Truncate(time.Second)
	end := begin.Add(time.Hour)
	vid := apptest.PublishVoucherWith(t, apps[0], 5, map[string]any{
		"beginTime": begin.Format(time.RFC3339), "endTime": end.Format(time.RFC3339), "waitingRoom": false})
	r := &room{t: t, apps: apps, vid: vid, begin: begin, toks: map[int64]string{}}
	us := users(8)
	for i := range apps {
		if code, c := r.buy(i, us[i], ""); code != http.StatusConflict || c != "SECKILL_NOT_STARTED" {
			t.Fatalf("instance %d before the start: got %d %s, want 409 SECKILL_NOT_STARTED", i, code, c)
		}
	}
	edit := map[string]any{"title": "e2e", "subTitle": "", "rules": "", "payValue": 100, "actualValue": 200, "stock": 5,
		"beginTime": begin.Format(time.RFC3339), "endTime": end.Format(time.RFC3339), "waitingRoom": true}
	if res := apptest.Call(t, apps[0], http.MethodPut, fmt.Sprintf("/voucher/seckill/%d", vid), admin, edit); res.Status != http.StatusOK {
		t.Fatalf("edit: got %d %s", res.Status, res.Body.Code)
	}
	waitUntil(begin)
	for i, u := range us[2:6] {
		if code, c := r.buy(i, u, ""); code != http.StatusForbidden || c != "NOT_ADMITTED" {
			t.Errorf("instance %d at the start, no token: got %d %s, want 403 NOT_ADMITTED", i%2, code, c)
		}
	}
	adm := r.join(0, us[6])
	if adm.Status != model.RoomAdmitted {
		t.Fatalf("joiner: got %+v, want admitted", adm)
	}
	if res := apptest.Call(t, apps[1], http.MethodPost, fmt.Sprintf("/voucher/seckill/%d/close", vid), admin, nil); res.Status != http.StatusOK {
		t.Fatalf("close: got %d %s", res.Status, res.Body.Code)
	}
	if code, c := r.buy(0, us[6], adm.Token); code != http.StatusConflict || c != "SECKILL_ENDED" {
		t.Errorf("admitted purchase on the other instance after the close: got %d %s, want 409 SECKILL_ENDED", code, c)
	}
	if au, _ := r.audit(); au.Orders != 0 {
		t.Errorf("audit: got %d orders, want none", au.Orders)
	}
}
