package sale

import (
	"errors"
	"fmt"
	"sync"

	"seckill/model"
)

// errRepeat marks a duplicate order refused from an instance's memory.
// It always comes with model.ErrDuplicateOrder.
var errRepeat = errors.New("the user's purchase of this voucher is decided or in flight here")

// repeatsPerGeneration bounds one generation of decided purchases.
const repeatsPerGeneration = 1 << 16

// buyer is one user's purchase of one voucher.
type buyer struct{ user, voucher int64 }

// repeats remembers, on one instance, the purchases decided here and those
// in flight here. A decided purchase ended in an order, or in a duplicate
// that the store confirmed. A repeat of either is a duplicate order, known
// without a round trip, so it is refused before any shared limit counts
// it. Forgetting is safe: the repeat then goes on to the store's checks.
//
// The decided purchases are kept in two generations of at most
// repeatsPerGeneration each. A full generation pushes out the older one.
type repeats struct {
	mu       sync.Mutex
	inFlight map[buyer]struct{}
	decided  map[buyer]struct{}
	older    map[buyer]struct{}
	max      int
}

// newRepeats returns a memory of decided purchases, at most perGeneration
// in each of its two generations.
func newRepeats(perGeneration int) *repeats {
	return &repeats{inFlight: map[buyer]struct{}{}, decided: map[buyer]struct{}{}, max: perGeneration}
}

// begin marks b in flight, or refuses it as a duplicate order when b is in
// flight or decided.
func (r *repeats) begin(b buyer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, busy := r.inFlight[b]
	_, done := r.decided[b]
	_, old := r.older[b]
	if busy || done || old {
		return fmt.Errorf("%w: %w", model.ErrDuplicateOrder, errRepeat)
	}
	r.inFlight[b] = struct{}{}
	return nil
}

// end ends b's flight with the purchase's outcome, and remembers b when
// the outcome decided it.
func (r *repeats) end(b buyer, outcome error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inFlight, b)
	if !decides(outcome) {
		return
	}
	if len(r.decided) >= r.max {
		r.older, r.decided = r.decided, map[buyer]struct{}{}
	}
	r.decided[b] = struct{}{}
}

// decides reports whether a purchase's outcome settles the user's slot: an
// order, or a duplicate the store found. A duplicate that only the per-user
// lock stopped does not: the request that held it may still fail.
func decides(outcome error) bool {
	return outcome == nil ||
		errors.Is(outcome, model.ErrDuplicateOrder) && !errors.Is(outcome, model.ErrLockRefused)
}
