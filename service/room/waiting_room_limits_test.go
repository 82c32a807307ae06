package room

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// joinStore answers every join as new the first time a user joins, and
// not new after.
type joinStore struct {
	drawStore
	joined map[int64]bool
}

func (s *joinStore) Step(_ context.Context, _, userID int64, op string, _ model.RoomCall) (model.RoomAnswer, error) {
	a := model.RoomAnswer{Status: model.RoomWaiting, Position: -1, Ahead: -1}
	if op == "join" && !s.joined[userID] {
		s.joined[userID], a.New = true, true
	}
	return a, nil
}

// countLimits records what each request was counted against; the user's
// limit refuses when refuse is set.
type countLimits struct {
	both, addr, user int
	refuse           bool
}

func (l *countLimits) Check(context.Context, int64, string) error { l.both++; return nil }
func (l *countLimits) CheckAddr(context.Context, string) error    { l.addr++; return nil }
func (l *countLimits) CheckUser(context.Context, int64) error {
	l.user++
	if l.refuse {
		return model.RateLimited("too many queue requests from this user", time.Second)
	}
	return nil
}

// TestFirstJoinNotCountedForTheUser: a user's first join of a room counts
// against the address's limit only; a second join counts against the
// user's too, after the script, and is refused by it; a poll counts
// against both before.
func TestFirstJoinNotCountedForTheUser(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	vouchers := catalogtest.NewVouchers(100)
	vouchers.Put(model.SeckillVoucher{VoucherID: 7, Stock: 40, InitialStock: 40, BeginTime: now.Add(time.Hour),
		EndTime: now.Add(2 * time.Hour), WaitingRoom: true})
	limits := &countLimits{}
	room := NewWaitingRoom(Deps{Store: &joinStore{joined: map[int64]bool{}}, Vouchers: vouchers, Tokens: nopSigner{},
		Limits: limits, Now: func() time.Time { return now }}, Config{})
	ctx := context.Background()
	if _, err := room.Join(ctx, 1, 7, "192.0.2.1"); err != nil || *limits != (countLimits{addr: 1}) {
		t.Fatalf("first join: %v, counted %+v, want the address's limit only", err, *limits)
	}
	if _, err := room.Join(ctx, 1, 7, "192.0.2.1"); err != nil || *limits != (countLimits{addr: 2, user: 1}) {
		t.Fatalf("second join: %v, counted %+v, want the address's and the user's", err, *limits)
	}
	limits.refuse = true
	var limited *model.RateLimitedError
	if _, err := room.Join(ctx, 1, 7, "192.0.2.1"); !errors.As(err, &limited) {
		t.Fatalf("a second join over the user's limit: got %v, want RATE_LIMITED", err)
	}
	if _, err := room.Poll(ctx, 1, 7, "", "192.0.2.1"); err != nil || limits.both != 1 {
		t.Fatalf("poll: %v, counted %+v, want both limits at once", err, *limits)
	}
}
