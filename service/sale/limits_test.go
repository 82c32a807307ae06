package sale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/model"
)

// stubLimiter answers each limit as told and records the calls.
type stubLimiter struct {
	answer map[string]error // by limit; errRefuse refuses
	mu     sync.Mutex
	calls  []string
}

var errRefuse = errors.New("refuse")

func (s *stubLimiter) do(name string, l model.Limit) (bool, time.Duration, error) {
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("%s:%d/%v", name, l.Rate, l.Period))
	s.mu.Unlock()
	switch err := s.answer[name]; {
	case err == errRefuse:
		return false, 700 * time.Millisecond, nil
	case err != nil:
		return false, 0, err
	}
	return true, 0, nil
}

func (s *stubLimiter) AllowAddr(_ context.Context, _ string, l model.Limit) (bool, time.Duration, error) {
	return s.do("addr", l)
}
func (s *stubLimiter) AllowUser(_ context.Context, _ int64, l model.Limit) (bool, time.Duration, error) {
	return s.do("user", l)
}
func (s *stubLimiter) AllowVoucher(_ context.Context, _ int64, l model.Limit) (bool, time.Duration, error) {
	return s.do("voucher", l)
}

// TestPurchaseLimits: the address's and the user's limits are checked at once.
// The voucher's is checked only when both passed.
// A refusal is RATE_LIMITED with its wait, the address's first.
// A limit that cannot be checked lets the purchase through and is counted.
// An unset limit is never asked. Calls and events are compared sorted.
func TestPurchaseLimits(t *testing.T) {
	down := model.Unavailable(errors.New("dial tcp: connection refused"))
	all := PurchaseLimitConfig{PerUser: 2, PerVoucher: 100, PerAddr: 5}
	tests := []struct {
		name      string
		cfg       PurchaseLimitConfig
		addr      string
		answer    map[string]error
		wantErr   string // reason of the refusal, "" = admitted
		wantCalls string
		wantEvent string
	}{
		{"all pass", all, "10.0.0.1", nil, "", "[addr:5/1s user:2/1s voucher:100/1s]", ""},
		{"address refused first", all, "10.0.0.1", map[string]error{"addr": errRefuse, "user": errRefuse},
			"too many purchases from this address", "[addr:5/1s user:2/1s]", "refused addr,refused user"},
		{"address refused before the voucher is counted", all, "10.0.0.1", map[string]error{"addr": errRefuse},
			"too many purchases from this address", "[addr:5/1s user:2/1s]", "refused addr"},
		{"user refused before the voucher is counted", all, "10.0.0.1", map[string]error{"user": errRefuse},
			"too many purchases from this user", "[addr:5/1s user:2/1s]", "refused user"},
		{"voucher refused", all, "10.0.0.1", map[string]error{"voucher": errRefuse},
			"too many purchases of this voucher", "[addr:5/1s user:2/1s voucher:100/1s]", "refused voucher"},
		{"redis down fails open", all, "10.0.0.1", map[string]error{"addr": down, "user": down, "voucher": down},
			"", "[addr:5/1s user:2/1s voucher:100/1s]", "failed addr,failed user,failed voucher"},
		{"redis down on one, another refuses", all, "10.0.0.1", map[string]error{"addr": down, "user": errRefuse},
			"too many purchases from this user", "[addr:5/1s user:2/1s]", "failed addr,refused user"},
		{"only the voucher", PurchaseLimitConfig{PerVoucher: 3}, "10.0.0.1", nil, "", "[voucher:3/1s]", ""},
		{"only the user, refused", PurchaseLimitConfig{PerUser: 2}, "10.0.0.1", map[string]error{"user": errRefuse},
			"too many purchases from this user", "[user:2/1s]", "refused user"},
		{"only the address", PurchaseLimitConfig{PerAddr: 5}, "10.0.0.1", nil, "", "[addr:5/1s]", ""},
		{"no address known", all, "", nil, "", "[user:2/1s voucher:100/1s]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &stubLimiter{answer: tt.answer}
			var mu sync.Mutex
			var events []string
			event := func(e string) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
			cfg := tt.cfg
			cfg.Refused = func(l string) { event("refused " + l) }
			cfg.Failed = func(l string) { event("failed " + l) }
			p := NewPurchaseLimits(store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			err := p.Admit(context.Background(), 7, 9, tt.addr)
			var rl *model.RateLimitedError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want admitted", err)
			case tt.wantErr != "" && (!errors.As(err, &rl) || rl.Reason != tt.wantErr || rl.RetryAfter != 700*time.Millisecond):
				t.Errorf("got %v, want RATE_LIMITED %q after 700ms", err, tt.wantErr)
			}
			slices.Sort(store.calls)
			slices.Sort(events)
			if got := fmt.Sprint(store.calls); got != tt.wantCalls {
				t.Errorf("calls: got %s, want %s", got, tt.wantCalls)
			}
			if got := strings.Join(events, ","); got != tt.wantEvent {
				t.Errorf("events: got %q, want %q", got, tt.wantEvent)
			}
		})
	}
	var none *PurchaseLimits
	if none.Enabled() || NewPurchaseLimits(&stubLimiter{}, PurchaseLimitConfig{}, nil).Enabled() {
		t.Error("Enabled with no limit configured: got true, want false")
	}
}
