package fakepay

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Trade states.
const (
	StateOpen   = "open"
	StatePaid   = "paid"
	StateClosed = "closed"
)

// Refund states, and the refund modes of the control API.
const (
	RefundProcessing = "processing"
	RefundDone       = "done"
	RefundFailed     = "failed"

	ModeOK         = "ok"
	ModeProcessing = "processing"
	ModeFail       = "fail"
)

// Trade is a trade at a fake provider. The store hands out copies.
type Trade struct {
	Provider   string    `json:"provider"`
	OutTradeNo string    `json:"outTradeNo"`
	TradeNo    string    `json:"tradeNo"`
	Subject    string    `json:"subject"`
	NotifyURL  string    `json:"notifyUrl"`
	State      string    `json:"state"` // open | paid | closed
	Amount     int64     `json:"amount"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpireAt   time.Time `json:"expireAt"`
	PaidAt     time.Time `json:"paidAt"`
	Refunds    []*Refund `json:"refunds"`
}

// Refund is a refund of a trade.
type Refund struct {
	OutRefundNo string    `json:"outRefundNo"`
	RefundNo    string    `json:"refundNo"`
	State       string    `json:"state"` // processing | done | failed
	Amount      int64     `json:"amount"`
	Reason      string    `json:"reason"`
	NotifyURL   string    `json:"notifyUrl"`
	At          time.Time `json:"at"`    // asked at; done at once done
	Calls       int       `json:"calls"` // calls with this out_refund_no
}

// Refunded is the sum of the trade's refunds done or in progress.
func (t *Trade) Refunded() int64 {
	var n int64
	for _, r := range t.Refunds {
		if r.State != RefundFailed {
			n += r.Amount
		}
	}
	return n
}

// Refund returns the trade's refund outRefundNo, or nil.
func (t *Trade) Refund(outRefundNo string) *Refund {
	for _, r := range t.Refunds {
		if r.OutRefundNo == outRefundNo {
			return r
		}
	}
	return nil
}

func (t *Trade) clone() Trade {
	c := *t
	c.Refunds = make([]*Refund, len(t.Refunds))
	for i, r := range t.Refunds {
		rc := *r
		c.Refunds[i] = &rc
	}
	return c
}

// Errors of the store; each provider answers them in its own codes.
var (
	ErrNoTrade      = errors.New("no such trade")
	ErrConflict     = errors.New("the trade exists with another amount")
	ErrTradeClosed  = errors.New("the trade is closed")
	ErrTradeExpired = errors.New("the trade is past its expiry")
	ErrTradePaid    = errors.New("the trade is paid")
	ErrNotPaid      = errors.New("the trade is not paid")
	ErrNoRefund     = errors.New("no such refund")
	ErrRefundAmount = errors.New("the refund exceeds what is left of the trade")
)

type tradeKey struct{ provider, outTradeNo string }

// Store holds the trades of every provider in memory, with each
// provider's switches (down, refund mode). Safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	trades map[tradeKey]*Trade
	seq    int64
	modes  map[string]string
	// tradeModes overrides a provider's refund mode for one trade, so
	// that tests sharing one fake do not change each other's refunds.
	tradeModes map[tradeKey]string
	down       map[string]bool
	extra      map[string][]BillLine // bill lines of no trade, per provider (bill.go)
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{trades: map[tradeKey]*Trade{}, modes: map[string]string{}, tradeModes: map[tradeKey]string{}, down: map[string]bool{}}
}

// Seq returns a new number, unique in this store.
func (s *Store) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// expire closes an open trade past its expiry, as the providers do.
func expire(t *Trade, now time.Time) {
	if t.State == StateOpen && !t.ExpireAt.IsZero() && now.After(t.ExpireAt) {
		t.State = StateClosed
	}
}

// Create opens t (Provider, OutTradeNo, Amount set; State and CreatedAt
// are the store's). One with the same number answers the existing trade,
// or ErrConflict when its amount differs.
func (s *Store) Create(t Trade, now time.Time) (Trade, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tradeKey{t.Provider, t.OutTradeNo}
	if old, ok := s.trades[k]; ok {
		expire(old, now)
		if old.Amount != t.Amount {
			return old.clone(), ErrConflict
		}
		return old.clone(), nil
	}
	s.seq++
	if t.TradeNo == "" {
		t.TradeNo = fmt.Sprintf("%s%010d", now.Format("20060102"), s.seq)
	}
	t.State, t.CreatedAt, t.PaidAt, t.Refunds = StateOpen, now, time.Time{}, nil
	expire(&t, now)
	s.trades[k] = &t
	return t.clone(), nil
}

// Get answers a trade by its number.
func (s *Store) Get(provider, outTradeNo string, now time.Time) (Trade, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trades[tradeKey{provider, outTradeNo}]
	if !ok {
		return Trade{}, ErrNoTrade
	}
	expire(t, now)
	return t.clone(), nil
}

// List answers a provider's trades, oldest first ("" = every provider).
func (s *Store) List(provider string, now time.Time) []Trade {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Trade{}
	for k, t := range s.trades {
		if provider == "" || k.provider == provider {
			expire(t, now)
			out = append(out, t.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TradeNo < out[j].TradeNo })
	return out
}

// Pay pays a trade. A trade closed or past its expiry is refused unless
// late (the payment that comes after the order is gone). Paying a paid
// trade answers it unchanged.
func (s *Store) Pay(provider, outTradeNo string, late bool, now time.Time) (Trade, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trades[tradeKey{provider, outTradeNo}]
	if !ok {
		return Trade{}, ErrNoTrade
	}
	expired := !t.ExpireAt.IsZero() && now.After(t.ExpireAt)
	switch {
	case t.State == StatePaid:
		return t.clone(), nil
	case late:
	case t.State == StateClosed && !expired:
		return t.clone(), ErrTradeClosed
	case expired:
		expire(t, now)
		return t.clone(), ErrTradeExpired
	}
	t.State, t.PaidAt = StatePaid, now
	return t.clone(), nil
}

// Close closes an open trade; a closed one stays closed. A paid trade is
// ErrTradePaid.
func (s *Store) Close(provider, outTradeNo string, now time.Time) (Trade, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trades[tradeKey{provider, outTradeNo}]
	if !ok {
		return Trade{}, ErrNoTrade
	}
	if t.State == StatePaid {
		return t.clone(), ErrTradePaid
	}
	t.State = StateClosed
	return t.clone(), nil
}

// Refund asks a refund of a paid trade, idempotent by r.OutRefundNo: a
// known one counts the call and answers as it is. A new one takes its
// state from the provider's refund mode (ok: done, processing, fail:
// failed). r needs OutRefundNo and Amount; RefundNo may be set.
func (s *Store) Refund(provider, outTradeNo string, r Refund, now time.Time) (Trade, Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trades[tradeKey{provider, outTradeNo}]
	if !ok {
		return Trade{}, Refund{}, ErrNoTrade
	}
	if old := t.Refund(r.OutRefundNo); old != nil {
		old.Calls++
		return t.clone(), *old, nil
	}
	if t.State != StatePaid {
		return t.clone(), Refund{}, ErrNotPaid
	}
	if r.Amount <= 0 || t.Refunded()+r.Amount > t.Amount {
		return t.clone(), Refund{}, ErrRefundAmount
	}
	s.seq++
	if r.RefundNo == "" {
		r.RefundNo = fmt.Sprintf("R%s%010d", now.Format("20060102"), s.seq)
	}
	r.Calls, r.At = 1, now
	mode, ok := s.tradeModes[tradeKey{provider, outTradeNo}]
	if !ok {
		mode = s.modes[provider]
	}
	switch mode {
	case ModeProcessing:
		r.State = RefundProcessing
	case ModeFail:
		r.State = RefundFailed
	default:
		r.State = RefundDone
	}
	t.Refunds = append(t.Refunds, &r)
	return t.clone(), r, nil
}

// CompleteRefund finishes a processing refund (done, at now); one done
// or failed stays as it is.
func (s *Store) CompleteRefund(provider, outTradeNo, outRefundNo string, now time.Time) (Trade, Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trades[tradeKey{provider, outTradeNo}]
	if !ok {
		return Trade{}, Refund{}, ErrNoTrade
	}
	r := t.Refund(outRefundNo)
	if r == nil {
		return t.clone(), Refund{}, ErrNoRefund
	}
	if r.State == RefundProcessing {
		r.State, r.At = RefundDone, now
	}
	return t.clone(), *r, nil
}

// SetRefundMode sets how a provider's next refunds answer.
func (s *Store) SetRefundMode(provider, mode string) error {
	return s.SetTradeRefundMode(provider, "", mode)
}

// SetTradeRefundMode sets how the next refunds of one trade answer
// (outTradeNo "": every trade without a mode of its own).
func (s *Store) SetTradeRefundMode(provider, outTradeNo, mode string) error {
	if !slices.Contains([]string{ModeOK, ModeProcessing, ModeFail}, mode) {
		return fmt.Errorf("refund mode %q: want ok, processing or fail", mode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if outTradeNo != "" {
		s.tradeModes[tradeKey{provider, outTradeNo}] = mode
		return nil
	}
	s.modes[provider] = mode
	return nil
}

// SetDown turns a provider's API off (503) or on again.
func (s *Store) SetDown(provider string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[provider] = down
}

// Down says whether a provider's API is off.
func (s *Store) Down(provider string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[provider]
}
