package waitingroom

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/model"
)

// TestKeyedReplayOutlivesAdmission: a purchase with an Idempotency-Key,
// retried with the same key and token after the admission lapsed, gets
// the stored answer (docs/api.md keeps it SECKILL_IDEMPOTENCY_TTL), on
// either instance. The lapsed token buys nothing new: with another key,
// without a token or with another user's lapsed token the purchase is 403
// NOT_ADMITTED, and the voucher has one order.
func TestKeyedReplayOutlivesAdmission(t *testing.T) {
	r := newRoom(t, twoApps(t, map[string]string{"SECKILL_WAITING_ROOM_TOKEN_TTL": "1s"}), 2, -time.Minute)
	us := users(2)
	a, b := r.join(0, us[0]), r.join(1, us[1])
	if a.Status != model.RoomAdmitted || b.Status != model.RoomAdmitted {
		t.Fatalf("got %+v and %+v, want both admitted", a, b)
	}
	path := fmt.Sprintf("/voucher-order/seckill/%d", r.vid)
	buy := func(i int, user int64, tok, key string) (int, string, string, http.Header) {
		t.Helper()
		code, res, h := r.do(i, http.MethodPost, path, user, map[string]string{"Admission-Token": tok, "Idempotency-Key": key})
		return code, res.Body.Code, string(res.Body.Data), h
	}
	code, _, first, _ := buy(0, us[0], a.Token, `"k-1"`)
	if code != http.StatusOK {
		t.Fatalf("keyed purchase: got %d, want 200", code)
	}
	// The admission lasts the TTL plus the longest pause between polls
	// (the TTL here): 2 s.
	time.Sleep(2200 * time.Millisecond)
	for i := range 2 {
		code, c, data, h := buy(i, us[0], a.Token, `"k-1"`)
		if code != http.StatusOK || data != first || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry on instance %d after the admission lapsed: got %d %s %s (replayed %q), want the stored 200 %s", i, code, c, data, h.Get("Idempotent-Replayed"), first)
		}
	}
	for _, tc := range []struct {
		name     string
		user     int64
		tok, key string
	}{
		{"the lapsed token, another key", us[0], a.Token, `"k-2"`},
		{"no token, the same key", us[0], "", `"k-1"`},
		{"another user's lapsed token and key", us[1], b.Token, `"k-1"`},
	} {
		if code, c, _, _ := buy(1, tc.user, tc.tok, tc.key); code != http.StatusForbidden || c != "NOT_ADMITTED" {
			t.Errorf("%s: got %d %s, want 403 NOT_ADMITTED", tc.name, code, c)
		}
	}
	if au, _ := r.audit(); au.Orders != 1 {
		t.Errorf("audit: got %d orders, want 1", au.Orders)
	}
}
