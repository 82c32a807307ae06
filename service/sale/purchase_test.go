package sale

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"seckill/model"
)

// steps records the purchase's calls in order.
type steps struct {
	log                 []string
	admit, gate, refuse error
	buy                 func() (int64, error)
}

func (s *steps) Admit(_ context.Context, _, _ int64, token string) error {
	s.log = append(s.log, "room.admit "+token)
	return s.admit
}
func (s *steps) Outcome(_ context.Context, _, _ int64, err error, _ time.Duration) {
	s.log = append(s.log, fmt.Sprintf("room.outcome %v", err))
}
func (s *steps) Refusal(int64) error {
	s.log = append(s.log, "sale.refusal")
	return s.refuse
}
func (s *steps) Buy(context.Context, int64, int64) (int64, error) {
	s.log = append(s.log, "sale.buy")
	return s.buy()
}

type gate struct{ *steps }

func (g gate) Admit(_ context.Context, _, _ int64, addr string) error {
	g.log = append(g.log, "limits.admit "+addr)
	return g.gate
}
func (g gate) Settle(_, _ int64, outcome error) {
	g.log = append(g.log, fmt.Sprintf("limits.settle %v", outcome))
}

// TestPurchaseSequence: the purchase runs the room's admission, the
// limits (not for a refusal from memory), the sale, the limits'
// settlement and the room's outcome, in that order, and stops at the
// first refusal; a sale that panics settles the limits without an order.
func TestPurchaseSequence(t *testing.T) {
	req := PurchaseRequest{UserID: 1, VoucherID: 2, Addr: "a", Admission: "t"}
	for _, tc := range []struct {
		name    string
		s       steps
		want    []string
		wantErr error
	}{
		{"an order", steps{}, []string{"room.admit t", "sale.refusal", "limits.admit a", "sale.buy", "limits.settle <nil>", "room.outcome <nil>"}, nil},
		{"not admitted", steps{admit: model.ErrNotAdmitted}, []string{"room.admit t"}, model.ErrNotAdmitted},
		{"refused from memory", steps{refuse: model.ErrSoldOut}, []string{"room.admit t", "sale.refusal", "room.outcome sold out"}, model.ErrSoldOut},
		{"over the limits", steps{gate: model.RateLimited("x", time.Second)}, []string{"room.admit t", "sale.refusal", "limits.admit a", "room.outcome x: try again in 1s"}, model.ErrRateLimited},
		{"sold out", steps{buy: func() (int64, error) { return 0, model.ErrSoldOut }}, []string{"room.admit t", "sale.refusal", "limits.admit a", "sale.buy", "limits.settle sold out", "room.outcome sold out"}, model.ErrSoldOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if s.buy == nil {
				s.buy = func() (int64, error) { return 9, nil }
			}
			p := NewPurchase(PurchaseDeps{Sale: &s, Room: &s, Limits: gate{&s}})
			id, err := p.Buy(context.Background(), req)
			if !errors.Is(err, tc.wantErr) || (err == nil && id != 9) {
				t.Errorf("got %d, %v; want %v", id, err, tc.wantErr)
			}
			if !reflect.DeepEqual(s.log, tc.want) {
				t.Errorf("steps:\n got %q\nwant %q", s.log, tc.want)
			}
		})
	}
	s := steps{buy: func() (int64, error) { panic("boom") }}
	p := NewPurchase(PurchaseDeps{Sale: &s, Limits: gate{&s}})
	func() {
		defer func() { _ = recover() }()
		_, _ = p.Buy(context.Background(), req)
	}()
	if last := s.log[len(s.log)-1]; last != "limits.settle "+errNoOutcome.Error() {
		t.Errorf("a sale that panicked: last step %q, want the limits settled without an order", last)
	}
}
