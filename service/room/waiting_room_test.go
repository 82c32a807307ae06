package room

import (
	"context"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// drawStore is a Store whose room is drawn by the first call that
// brings the stock.
type drawStore struct {
	mu    sync.Mutex
	drawn bool
	base  int
	asked chan struct{} // receives each answer ErrRoomNeedsBase, if set
}

func (s *drawStore) Step(_ context.Context, _, _ int64, _ string, c model.RoomCall) (model.RoomAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.drawn {
		if c.Base < 0 {
			if s.asked != nil {
				s.asked <- struct{}{}
			}
			return model.RoomAnswer{}, model.ErrRoomNeedsBase
		}
		s.drawn, s.base = true, c.Base
	}
	return model.RoomAnswer{Status: model.RoomWaiting, Position: 1, Ahead: 0}, nil
}

func (s *drawStore) Notify(context.Context, int64, int64, string, model.RoomCall) error { return nil }

func (s *drawStore) Audit(context.Context, int64, model.RoomCall) (*model.RoomAudit, error) {
	return nil, nil
}

type nopSigner struct{}

func (nopSigner) Sign(int64, int64, time.Time) string        { return "t" }
func (nopSigner) Valid(string, int64, int64, time.Time) bool { return true }
func (nopSigner) Signed(string, int64, int64) bool           { return true }

// TestDrawReadsStockOnce: 50 buyers polling at once at the start, all
// told the room needs its draw, cost one read of the stock: the others
// find the room drawn.
func TestDrawReadsStockOnce(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	vouchers := catalogtest.NewVouchers(100)
	vouchers.Put(model.SeckillVoucher{VoucherID: 7, Stock: 40, InitialStock: 40, BeginTime: now.Add(-time.Second),
		EndTime: now.Add(time.Hour), WaitingRoom: true})
	store := &drawStore{}
	room := NewWaitingRoom(Deps{Store: store, Vouchers: vouchers, Tokens: nopSigner{}, Now: func() time.Time { return now }}, Config{})
	if _, err := room.Poll(context.Background(), 1, 7, "", ""); err != nil {
		t.Fatal(err) // loads the voucher into the cache
	}
	store.drawn, store.asked = false, make(chan struct{}, 100)
	// The stock's read waits until every buyer was told the room needs it.
	vouchers.Gate = make(chan struct{})
	before := vouchers.GetCalls.Load()
	var wg sync.WaitGroup
	for u := range 50 {
		wg.Go(func() {
			if _, err := room.Poll(context.Background(), int64(u+1), 7, "", ""); err != nil {
				t.Error(err)
			}
		})
	}
	for range 50 {
		<-store.asked
	}
	close(vouchers.Gate)
	wg.Wait()
	if n := vouchers.GetCalls.Load() - before; n != 1 || store.base != 40 {
		t.Errorf("got %d reads of the stock and base %d, want 1 and 40", n, store.base)
	}
}

func (*drawStore) Drop(context.Context, int64) error { return nil }
