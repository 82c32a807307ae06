package handler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"seckill/auth"
	"seckill/handler"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/room"
)

// fakeRooms is a room.Store that records the purchases' outcomes.
type fakeRooms struct {
	mu       sync.Mutex
	notified []string
}

func (f *fakeRooms) Step(context.Context, int64, int64, string, model.RoomCall) (model.RoomAnswer, error) {
	return model.RoomAnswer{Status: model.RoomWaiting, Position: -1, Ahead: -1, Now: testNow}, nil
}

func (f *fakeRooms) Notify(_ context.Context, _, _ int64, op string, _ model.RoomCall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notified = append(f.notified, op)
	return nil
}

func (f *fakeRooms) Audit(context.Context, int64, model.RoomCall) (*model.RoomAudit, error) {
	return nil, nil
}

// TestAdmissionBeforeAnything: a purchase of a voucher with a room and no
// valid Admission-Token is 403 NOT_ADMITTED before the limits and before
// the seckill service (so before any lock or stock); a valid one goes on,
// and the room is told of the purchase.
func TestAdmissionBeforeAnything(t *testing.T) {
	rooms, limits := &fakeRooms{}, newFakeLimits(100)
	signer := auth.NewAdmissions(testSecret)
	vouchers := catalogtest.NewVouchers(100)
	e := newEnv(t, func(d *handler.Deps) {
		d.Limits = limits
		d.Room = room.NewWaitingRoom(room.Deps{Store: rooms, Vouchers: vouchers, Tokens: signer,
			Now: func() time.Time { return testNow }}, room.Config{})
	})
	sv := &model.SeckillVoucher{Stock: 5, InitialStock: 5, BeginTime: testNow.Add(-time.Hour), EndTime: testNow.Add(time.Hour), WaitingRoom: true}
	if err := vouchers.CreateSeckill(context.Background(), &model.Voucher{}, sv); err != nil {
		t.Fatal(err)
	}
	vid := sv.VoucherID
	buy := func(tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/voucher-order/seckill/"+strconv.FormatInt(vid, 10), nil)
		req.Header.Set("authorization", e.userTok)
		if tok != "" {
			req.Header.Set(handler.AdmissionHeader, tok)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	for _, tok := range []string{"", "v1.x", signer.Sign(8, vid, testNow.Add(time.Minute)), signer.Sign(7, vid, testNow)} {
		if rec := buy(tok); rec.Code != http.StatusForbidden {
			t.Errorf("token %q: got %d %s, want 403 NOT_ADMITTED", tok, rec.Code, rec.Body.String())
		}
	}
	if n := len(e.seck.buyCalls()); n != 0 || len(limits.addrs) != 0 {
		t.Fatalf("refused purchases reached the service %d times and the limits %d times, want 0", n, len(limits.addrs))
	}
	if rec := buy(signer.Sign(7, vid, testNow.Add(time.Minute))); rec.Code != http.StatusOK {
		t.Fatalf("valid token: got %d %s, want 200", rec.Code, rec.Body.String())
	}
	if n := len(e.seck.buyCalls()); n != 1 || len(rooms.notified) != 1 || rooms.notified[0] != "bought" {
		t.Errorf("valid token: got %d purchases, room told %v, want 1 and [bought]", n, rooms.notified)
	}
}

func (*fakeRooms) Drop(context.Context, int64) error { return nil }
