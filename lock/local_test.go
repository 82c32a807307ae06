package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/lock"
)

func init() {
	newLocal := func(tb testing.TB, opts ...lock.Option) lock.Locker { return must(tb)(lock.NewLocal(opts...)) }
	contractBackends = append(contractBackends, backend{name: "local", new: newLocal, exclusive: true})
}

// TestLocalFreesEntries: the per-key map holds a key only while someone
// holds or waits for it, whatever way the wait ended.
func TestLocalFreesEntries(t *testing.T) {
	l, err := lock.NewLocal(lock.WithWait(50 * time.Millisecond))
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	ctx := context.Background()
	h := obtain(t, l, ctx, "a")
	if got := lock.LocalSizeForTest(l); got != 1 {
		t.Fatalf("entries while held: got %d, want 1", got)
	}
	if _, err := l.Obtain(ctx, "a"); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain while held: got %v, want ErrNotObtained", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Obtain(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Obtain cancelled: got %v, want context.Canceled", err)
	}
	mustRelease(t, h)
	if got := lock.LocalSizeForTest(l); got != 0 {
		t.Errorf("entries after release: got %d, want 0", got)
	}
}

// TestLocalServesWaitersInOrder: waiters queue on a channel send, which Go
// serves first come, first served.
func TestLocalServesWaitersInOrder(t *testing.T) {
	l, err := lock.NewLocal(lock.WithWait(10 * time.Second))
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	ctx := testContext(t, 20*time.Second)
	h := obtain(t, l, ctx, "k")
	const n = 5
	order := make(chan int, n)
	for i := range n {
		go func() {
			w, err := l.Obtain(ctx, "k")
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				order <- -1
				return
			}
			order <- i
			mustRelease(t, w)
		}()
		// Let waiter i block before starting waiter i+1.
		time.Sleep(20 * time.Millisecond)
	}
	mustRelease(t, h)
	for want := range n {
		if got := <-order; got != want {
			t.Errorf("grant #%d went to waiter %d, want %d", want, got, want)
		}
	}
}
