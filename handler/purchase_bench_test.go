package handler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"seckill/handler"
	"seckill/model"
	"seckill/observe/live"
	"seckill/service/catalog/catalogtest"
	"seckill/service/room"
)

// benchSale answers every purchase with err (an order when nil), at no
// cost: the benchmarks measure the route around it.
type benchSale struct{ err error }

func (benchSale) Refusal(int64) error { return nil }

func (s benchSale) Buy(context.Context, int64, int64) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	return 1 << 40, nil
}

func (benchSale) Order(context.Context, int64, int64) (*model.VoucherOrder, error) {
	return nil, model.ErrOrderNotFound
}

func (benchSale) Audit(context.Context, int64) (*model.Audit, error) {
	return nil, model.ErrVoucherNotFound
}

// purchaseEnv serves a purchase answered by benchSale{err} through the
// route's default chain (the access log, the waiting room's check of a
// voucher without a room, the live counters), and the no-op beside it.
func purchaseEnv(b *testing.B, err error, want int) (buy, noop *http.Request, h http.Handler) {
	vouchers := catalogtest.NewVouchers(100)
	sv := &model.SeckillVoucher{Stock: 5, InitialStock: 5, BeginTime: testNow.Add(-time.Hour), EndTime: testNow.Add(time.Hour)}
	if err := vouchers.CreateSeckill(context.Background(), &model.Voucher{}, sv); err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, func(d *handler.Deps) {
		d.Seckill = benchSale{err}
		d.AccessLog = 20
		d.Live = live.NewRecorder()
		d.Room = room.NewWaitingRoom(room.Deps{Store: &fakeRooms{}, Vouchers: vouchers,
			Now: func() time.Time { return testNow }}, room.Config{})
	})
	buy = httptest.NewRequest(http.MethodPost, "/voucher-order/seckill/"+strconv.FormatInt(sv.VoucherID, 10), nil)
	buy.Header.Set("authorization", e.userTok)
	noop = httptest.NewRequest(http.MethodGet, "/debug/noop", nil)
	noop.Header.Set("authorization", e.userTok)
	for _, r := range []*http.Request{buy, noop} {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, r)
		if w := map[bool]int{true: want, false: http.StatusOK}[r == buy]; rec.Code != w {
			b.Fatalf("%s: got %d %s, want %d", r.URL.Path, rec.Code, rec.Body.String(), w)
		}
	}
	return buy, noop, e.h
}

// serveLoopStatus serves r b.N times and checks each answer's status.
func serveLoopStatus(b *testing.B, h http.Handler, r *http.Request, want int) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			b.Fatalf("got %d", rec.Code)
		}
	}
}

// BenchmarkPurchaseAdmitted is an admitted purchase's route, the sale's
// own work left out.
func BenchmarkPurchaseAdmitted(b *testing.B) {
	buy, _, h := purchaseEnv(b, nil, http.StatusOK)
	serveLoopStatus(b, h, buy, http.StatusOK)
}

// BenchmarkPurchaseSoldOut is a purchase refused SOLD_OUT from memory.
func BenchmarkPurchaseSoldOut(b *testing.B) {
	buy, _, h := purchaseEnv(b, model.ErrSoldOut, http.StatusConflict)
	serveLoopStatus(b, h, buy, http.StatusConflict)
}

// BenchmarkPurchaseNoop is the no-op endpoint beside them.
func BenchmarkPurchaseNoop(b *testing.B) {
	_, noop, h := purchaseEnv(b, nil, http.StatusOK)
	serveLoopStatus(b, h, noop, http.StatusOK)
}
