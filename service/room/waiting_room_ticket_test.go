package room

import (
	"context"
	"sync"
	"testing"
	"time"

	"seckill/auth"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// countStore is a drawn, open room whose serving number the test sets;
// it counts the calls it receives and answers every user waiting at the
// position in pos, or admitted once the serving number reached it.
type countStore struct {
	mu            sync.Mutex
	serving       int64
	pos           map[int64]int64
	steps, audits int
}

func (s *countStore) Step(_ context.Context, _, userID int64, _ string, _ model.RoomCall) (model.RoomAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps++
	p := s.pos[userID]
	if p <= s.serving {
		return model.RoomAnswer{Status: model.RoomAdmitted, Position: p, Expires: time.Now().Add(time.Hour)}, nil
	}
	return model.RoomAnswer{Status: model.RoomWaiting, Position: p, Ahead: p - s.serving - 1}, nil
}

func (s *countStore) Notify(context.Context, int64, int64, string, model.RoomCall) error { return nil }

func (s *countStore) Audit(context.Context, int64, model.RoomCall) (*model.RoomAudit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audits++
	return &model.RoomAudit{State: "open", Seed: "seed-1", Serving: s.serving}, nil
}

func (s *countStore) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps + s.audits
}

// ticketRoom is a room of voucher 7, open an hour, on store, whose clock
// the test moves with *now.
func ticketRoom(t *testing.T, store Store, now *time.Time, adm *auth.Admissions) *WaitingRoom {
	t.Helper()
	vouchers := catalogtest.NewVouchers(100)
	vouchers.Put(model.SeckillVoucher{VoucherID: 7, Stock: 40, InitialStock: 40, BeginTime: now.Add(-time.Second),
		EndTime: now.Add(time.Hour), WaitingRoom: true})
	return NewWaitingRoom(Deps{Store: store, Vouchers: vouchers, Tokens: adm, Tickets: adm,
		Now: func() time.Time { return *now }}, Config{})
}

// TestTicketPollsCostNoStoreCall: with the ticket of its join, a waiting
// buyer's 100 polls between two reads of the room cost no store call and
// tell the place; once the serving number reaches the buyer (read again
// after roomStateTTL), the poll runs the script, which admits.
func TestTicketPollsCostNoStoreCall(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	store := &countStore{serving: 3, pos: map[int64]int64{1: 10}}
	room := ticketRoom(t, store, &now, auth.NewAdmissions("s"))
	ctx := context.Background()
	j, err := room.Join(ctx, 1, 7, "")
	if err != nil || j.Ticket == "" {
		t.Fatalf("join: %+v, %v; want a ticket", j, err)
	}
	before := store.calls()
	for range 100 {
		v, err := room.Poll(ctx, 1, 7, j.Ticket, "")
		if err != nil || v.Status != model.RoomWaiting || *v.Position != 10 || *v.Ahead != 6 || v.Ticket != j.Ticket {
			t.Fatalf("poll: %+v, %v; want waiting at 10 with 6 ahead", v, err)
		}
	}
	if n := store.calls() - before; n != 0 {
		t.Errorf("100 polls with a ticket cost %d store calls, want 0", n)
	}
	store.mu.Lock()
	store.serving = 10
	store.mu.Unlock()
	now = now.Add(roomStateTTL)
	v, err := room.Poll(ctx, 1, 7, j.Ticket, "")
	if err != nil || v.Status != model.RoomAdmitted || v.Token == "" {
		t.Fatalf("poll at the turn: %+v, %v; want admitted with a token", v, err)
	}
	if store.steps != 2 || store.audits != 2 {
		t.Errorf("got %d steps and %d reads, want 2 and 2 (join, turn)", store.steps, store.audits)
	}
}

// TestForgedTicketRunsScript: a ticket of another user, voucher, key or
// room seed, or one altered to claim a later place, is never trusted:
// the poll runs the script, whose answer (admitted) stands.
func TestForgedTicketRunsScript(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	store := &countStore{serving: 5, pos: map[int64]int64{1: 2, 2: 50}}
	adm := auth.NewAdmissions("s")
	room := ticketRoom(t, store, &now, adm)
	ctx := context.Background()
	own := adm.SignTicket(1, 7, 50, "seed-1")
	forged := []string{
		adm.SignTicket(2, 7, 50, "seed-1"),                     // another user's
		adm.SignTicket(1, 8, 50, "seed-1"),                     // another voucher's
		adm.SignTicket(1, 7, 50, "seed-0"),                     // an older room's
		auth.NewAdmissions("t").SignTicket(1, 7, 50, "seed-1"), // another key's
		"q1.7.1.50" + own[len("q1.7.1.2"):],                    // a place changed
		"garbage",
	}
	for _, tk := range forged {
		before := store.steps
		v, err := room.Poll(ctx, 1, 7, tk, "")
		if err != nil || v.Status != model.RoomAdmitted || store.steps != before+1 {
			t.Errorf("ticket %q: %+v, %v after %d steps; want the script's answer, admitted", tk, v, err, store.steps-before)
		}
	}
}

// countSigner counts the checks of the tickets.
type countSigner struct {
	*auth.Admissions
	mu     sync.Mutex
	checks int
}

func (c *countSigner) Ticket(ticket string, userID, voucherID int64, seed string) (int64, bool) {
	c.mu.Lock()
	c.checks++
	c.mu.Unlock()
	return c.Admissions.Ticket(ticket, userID, voucherID, seed)
}

// TestCheckedTicketRemembered: a ticket found signed is not checked again
// for the same user, voucher and seed; it is for another user, and a
// ticket refused is checked every time.
func TestCheckedTicketRemembered(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	store := &countStore{serving: 3, pos: map[int64]int64{1: 10, 2: 20}}
	adm := auth.NewAdmissions("s")
	room := ticketRoom(t, store, &now, adm)
	signer := &countSigner{Admissions: adm}
	room.tickets = signer
	ctx := context.Background()
	tk := adm.SignTicket(2, 7, 20, "seed-1")
	for range 5 {
		if v, err := room.Poll(ctx, 2, 7, tk, ""); err != nil || v.Position == nil || *v.Position != 20 || v.Token != "" {
			t.Fatalf("poll: %+v, %v; want waiting at 20", v, err)
		}
	}
	if signer.checks != 1 {
		t.Errorf("5 polls with one ticket: %d checks, want 1", signer.checks)
	}
	// User 1 with user 2's ticket (the slot of another user): refused,
	// the script answers user 1's own place.
	if v, err := room.Poll(ctx, 1, 7, tk, ""); err != nil || v.Position == nil || *v.Position != 10 {
		t.Errorf("user 1 with user 2's ticket: %+v, %v; want the script's answer, 10", v, err)
	}
	bad := tk[:len(tk)-1] + "A"
	if tk[len(tk)-1] == 'A' {
		bad = tk[:len(tk)-1] + "B"
	}
	before := signer.checks
	for range 3 {
		room.Poll(ctx, 2, 7, bad, "")
	}
	if n := signer.checks - before; n != 3 {
		t.Errorf("3 polls with a forged ticket: %d checks, want 3", n)
	}
}

func (*countStore) Drop(context.Context, int64) error { return nil }
