package sale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"seckill/model"
)

// TestRepeatsSpendNoLimit: a user's purchase of a voucher that is in flight
// or decided on this instance is DUPLICATE_ORDER from memory, after the
// address's limit and before the voucher's, which is not asked for it. A decided purchase is an order or a duplicate the store
// found. A refusal by a limit, a duplicate only the lock stopped, an outage
// and a route with no outcome decide nothing: the next attempt is asked.
func TestRepeatsSpendNoLimit(t *testing.T) {
	lockRefused := fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrLockRefused)
	tests := []struct {
		name      string
		outcome   error
		wantRetry bool // a later attempt is asked again
	}{
		{"an order", nil, false},
		{"a duplicate the store found", model.ErrDuplicateOrder, false},
		{"a unique key", fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey), false},
		{"a duplicate the lock stopped", lockRefused, true},
		{"sold out", model.ErrSoldOut, true},
		{"an outage", model.Unavailable(errors.New("i/o timeout")), true},
		{"no outcome", errors.New("purchase ended without an outcome"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &stubLimiter{}
			p := NewPurchaseLimits(store, PurchaseLimitConfig{PerVoucher: 20, PerAddr: 5}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			ctx := context.Background()
			if err := p.Admit(ctx, 7, 9, "10.0.0.1"); err != nil {
				t.Fatalf("first purchase: got %v, want admitted", err)
			}
			// In flight: a second attempt is a duplicate, asked nowhere.
			if err := p.Admit(ctx, 7, 9, "10.0.0.2"); !errors.Is(err, model.ErrDuplicateOrder) {
				t.Errorf("attempt in flight: got %v, want DUPLICATE_ORDER", err)
			}
			if got := vouchers(store); got != 1 {
				t.Errorf("voucher's limit asked: got %d %v, want once (the first purchase)", got, store.calls)
			}
			p.Settle(7, 9, tt.outcome)
			err := p.Admit(ctx, 7, 9, "10.0.0.3")
			switch {
			case tt.wantRetry && err != nil:
				t.Errorf("after %v: got %v, want admitted", tt.outcome, err)
			case !tt.wantRetry && !errors.Is(err, model.ErrDuplicateOrder):
				t.Errorf("after %v: got %v, want DUPLICATE_ORDER", tt.outcome, err)
			case !tt.wantRetry && vouchers(store) != 1:
				t.Errorf("voucher's limit asked: got %v, want only by the first purchase", store.calls)
			case len(store.calls) != 3+vouchers(store):
				t.Errorf("address's limit asked: got %v, want by every attempt", store.calls)
			}
			// Another user, another voucher: asked as usual.
			for _, b := range []buyer{{8, 9}, {7, 10}} {
				if err := p.Admit(ctx, b.user, b.voucher, "10.0.0.4"); err != nil {
					t.Errorf("user %d voucher %d: got %v, want admitted", b.user, b.voucher, err)
				}
			}
		})
	}
}

// vouchers is how many times the voucher's limit was asked.
func vouchers(s *stubLimiter) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if strings.HasPrefix(c, "voucher:") {
			n++
		}
	}
	return n
}

// TestRepeatsRefusedByALimitRetry: a purchase a limit refuses is not in
// flight any more; the next attempt is asked again.
func TestRepeatsRefusedByALimitRetry(t *testing.T) {
	store := &stubLimiter{answer: map[string]error{"voucher": errRefuse}}
	p := NewPurchaseLimits(store, PurchaseLimitConfig{PerVoucher: 20}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range 2 {
		var rl *model.RateLimitedError
		if err := p.Admit(context.Background(), 7, 9, ""); !errors.As(err, &rl) {
			t.Errorf("attempt %d: got %v, want RATE_LIMITED", i+1, err)
		}
	}
}

// TestRepeatsBounded: the decided purchases kept are at most two
// generations; the oldest are forgotten, and then asked again.
func TestRepeatsBounded(t *testing.T) {
	r := newRepeats(4)
	for u := range int64(12) {
		if err := r.begin(buyer{u, 1}); err != nil {
			t.Fatalf("user %d: got %v, want in flight", u, err)
		}
		r.end(buyer{u, 1}, nil)
	}
	if n := len(r.decided) + len(r.older) + len(r.inFlight); n > 8 {
		t.Errorf("kept: got %d, want at most 8", n)
	}
	if err := r.begin(buyer{0, 1}); err != nil {
		t.Errorf("the oldest buyer: got %v, want forgotten (in flight again)", err)
	}
	if err := r.begin(buyer{11, 1}); !errors.Is(err, model.ErrDuplicateOrder) {
		t.Errorf("the newest buyer: got %v, want DUPLICATE_ORDER", err)
	}
}
