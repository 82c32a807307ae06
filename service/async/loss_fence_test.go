package async

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"seckill/model"
)

// Tests of the loss fence (docs/async.md, "the loss fence"): a rebuild from
// the facts waits for the consumers' writes in flight, and refuses the
// writes of entries read before it.

// reconFence is the loss fence of the in-memory world. A write holds it
// shared from its check to its commit, as the batch transaction holds the
// row. Move takes it exclusive, then changes the value.
type reconFence struct {
	rw     sync.RWMutex
	mu     sync.Mutex
	value  string
	moves  int
	moving chan struct{} // closed when a Move starts to wait (once)
}

func (f *reconFence) Current(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.value, nil
}

func (f *reconFence) Move(context.Context) error {
	f.mu.Lock()
	if f.moving != nil {
		close(f.moving)
		f.moving = nil
	}
	f.mu.Unlock()
	f.rw.Lock()
	defer f.rw.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moves++
	f.value = "v" + strconv.Itoa(f.moves)
	return nil
}

// hold checks want as a write's transaction does. It returns the end of
// that transaction.
func (f *reconFence) hold(want string) (func(), error) {
	f.rw.RLock()
	v, _ := f.Current(context.Background())
	if v != want {
		f.rw.RUnlock()
		return nil, model.ErrLossFenceMoved
	}
	return f.rw.RUnlock, nil
}

// TestRebuildAfterALossWaitsForTheBatchInFlight: a consumer read the two
// pending entries, checked the fence and is about to commit, when Redis
// restarts empty. The automatic rebuild runs at once, with no timeout to
// wait. It must count the two orders that commit under it: 5 written, stock
// 5 of 10. Without the fence the facts miss them: stock 7 beside 5 orders
// sells 12 units of 10.
func TestRebuildAfterALossWaitsForTheBatchInFlight(t *testing.T) {
	w := newReconWorld()
	s := newReconciler(t, w)
	ctx := context.Background()
	before, _ := w.fence.Current(ctx)
	commit, err := w.fence.hold(before)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := w.stream
	w.wipe()
	if err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.redisVoucher(reconVID).State; st != model.VoucherStateUnsafe {
		t.Fatalf("after the loss: got state %q, want unsafe", st)
	}
	// The batch commits as soon as the rebuild waits for the fence, or
	// reads the facts, whichever comes first.
	moving, factsRead := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.fence.mu.Lock()
	w.fence.moving = moving
	w.fence.mu.Unlock()
	w.mu.Lock()
	w.beforeDBRead = func(*reconWorld) { once.Do(func() { close(factsRead) }) }
	w.mu.Unlock()
	batch := make(chan struct{})
	go func() {
		defer close(batch)
		select {
		case <-moving:
		case <-factsRead:
		}
		w.mu.Lock()
		for _, e := range inFlight {
			w.orders[e.OrderID] = model.VoucherOrder{ID: e.OrderID, UserID: e.UserID, VoucherID: e.VoucherID}
		}
		w.mu.Unlock()
		commit()
	}()
	if err := s.rebuildUnsafe(ctx); err != nil {
		t.Fatal(err)
	}
	<-batch
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, orders := w.redisVoucher(reconVID), len(w.orders)
	if rv.State != model.VoucherStateOK || orders != 5 || rv.Stock+int64(orders) != 10 || rv.Buyers != 5 {
		t.Errorf("after the rebuild: got %+v beside %d orders, want state ok, stock + orders = 10 (5 + 5), 5 buyers", rv, orders)
	}
	if w.fence.moves != 1 {
		t.Errorf("fence moved %d times, want 1", w.fence.moves)
	}
}

// consFence is a loss fence whose value moves on demand.
type consFence struct {
	mu    sync.Mutex
	value string
}

func (f *consFence) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.value
}

func (f *consFence) Current(context.Context) (string, error) { return f.get(), nil }

func (f *consFence) Move(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value += "+"
	return nil
}

// TestConsumerRechecksEntriesReadBeforeTheFenceMoved: a consumer holds
// three entries read under the fence's value when a rebuild moves it. Its
// write is refused: nothing written, acknowledged or kept for a plain retry
// (written under the new value, they would follow the facts that did not
// count them). The consumer reads the fence again and keeps only the
// entries still pending with it. Two were lost with Redis: never written.
// The third is in the stream the rebuild read: it is written.
func TestConsumerRechecksEntriesReadBeforeTheFenceMoved(t *testing.T) {
	for _, oneByOne := range []bool{false, true} {
		t.Run("one by one "+strconv.FormatBool(oneByOne), func(t *testing.T) {
			r := newConsRig(t)
			f := &consFence{value: "f0"}
			r.orders.fence, r.c.d.Fence = f, f
			ctx := context.Background()
			if err := r.c.readFence(ctx); err != nil || r.c.fence != "f0" {
				t.Fatalf("read the fence: got %q, %v, want f0", r.c.fence, err)
			}
			if oneByOne {
				// A business refusal of the batch: the orders go one by one.
				r.orders.batchErr = errors.New("refused")
			}
			read := entries(3)
			if err := f.Move(ctx); err != nil {
				t.Fatal(err)
			}
			if left := r.c.process(read); len(left) != 0 || !r.c.fenceMoved() || len(r.c.recheck) != 3 {
				t.Fatalf("after the move: got %d kept, fence moved %v, %d held, want 0, true, 3", len(left), r.c.fenceMoved(), len(r.c.recheck))
			}
			if len(r.orders.written) != 0 || len(r.q.acked) != 0 || len(r.q.dead) != 0 {
				t.Fatalf("after the move: got %d written, %d acknowledged, %d dead, want none", len(r.orders.written), len(r.q.acked), len(r.q.dead))
			}
			r.orders.batchErr = nil
			if err := r.c.readFence(ctx); err != nil || r.c.fence != "f0+" {
				t.Fatalf("read the fence again: got %q, %v, want f0+", r.c.fence, err)
			}
			r.q.lost = map[string]bool{"m1": true, "m2": true}
			owned, err := r.c.recheckHeld(ctx)
			if err != nil || len(owned) != 1 || owned[0].MsgID != "m3" || len(r.c.recheck) != 0 {
				t.Fatalf("recheck: got %v, %v, %d still held, want m3 alone, none held", owned, err, len(r.c.recheck))
			}
			if left := r.c.process(owned); len(left) != 0 || len(r.orders.written) != 1 || r.orders.written[103].UserID != 3 {
				t.Errorf("under the new value: got %d kept, written %v, want 0, order 103 alone", len(left), r.orders.written)
			}
		})
	}
}

// fenceMoves is how many times the world's fence moved.
func (w *reconWorld) fenceMoves() int {
	w.fence.mu.Lock()
	defer w.fence.mu.Unlock()
	return w.fence.moves
}
