package handler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"seckill/auth"
	"seckill/handler"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/room"
)

// drawnRooms is a room.Store whose room is drawn and serves position 10:
// a ticket past it is answered from memory.
type drawnRooms struct{ fakeRooms }

func (d *drawnRooms) Audit(context.Context, int64, model.RoomCall) (*model.RoomAudit, error) {
	return &model.RoomAudit{Seed: "bench-seed", Serving: 10, State: "open"}, nil
}

// pollEnv serves a ticketed poll and the no-op through the real router
// and auth middleware; the room's state is in memory.
func pollEnv(b *testing.B) (poll, noop *http.Request, h http.Handler) {
	signer := auth.NewAdmissions(testSecret)
	vouchers := catalogtest.NewVouchers(100)
	e := newEnv(b, func(d *handler.Deps) {
		d.Room = room.NewWaitingRoom(room.Deps{Store: &drawnRooms{}, Vouchers: vouchers,
			Tokens: signer, Tickets: signer, Now: func() time.Time { return testNow }}, room.Config{})
	})
	sv := &model.SeckillVoucher{Stock: 5, InitialStock: 5, BeginTime: testNow.Add(-time.Hour), EndTime: testNow.Add(time.Hour), WaitingRoom: true}
	if err := vouchers.CreateSeckill(context.Background(), &model.Voucher{}, sv); err != nil {
		b.Fatal(err)
	}
	poll = httptest.NewRequest(http.MethodGet, "/voucher-order/seckill/"+strconv.FormatInt(sv.VoucherID, 10)+"/queue", nil)
	poll.Header.Set("authorization", e.userTok)
	poll.Header.Set(handler.TicketHeader, signer.SignTicket(7, sv.VoucherID, 250, "bench-seed"))
	noop = httptest.NewRequest(http.MethodGet, "/debug/noop", nil)
	noop.Header.Set("authorization", e.userTok)
	for _, r := range []*http.Request{poll, noop} {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: got %d %s, want 200", r.URL.Path, rec.Code, rec.Body.String())
		}
	}
	return poll, noop, e.h
}

// serveLoop serves r b.N times with a reused recorder.
func serveLoop(b *testing.B, h http.Handler, r *http.Request) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("got %d", rec.Code)
		}
	}
}

// BenchmarkPollTicket is a waiting buyer's poll with a valid ticket.
func BenchmarkPollTicket(b *testing.B) {
	poll, _, h := pollEnv(b)
	serveLoop(b, h, poll)
}

// BenchmarkNoop is the no-op endpoint behind the same middleware.
func BenchmarkNoop(b *testing.B) {
	_, noop, h := pollEnv(b)
	serveLoop(b, h, noop)
}

func (*drawnRooms) Drop(context.Context, int64) error { return nil }
