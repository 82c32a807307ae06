package sale

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/internal/ordertest"
	"seckill/service/internal/servicetest"
)

// fakeGroups is a GroupOrderStore: it writes each order of a group with
// the fake order store (or answers all with err) and records the groups.
type fakeGroups struct {
	orders *ordertest.Orders
	err    error
	during func(ctx context.Context) // runs first in CreateOrders
	mu     sync.Mutex
	groups [][]int64 // user ids per group, in arrival order
}

func (f *fakeGroups) CreateOrders(ctx context.Context, orders []model.VoucherOrder, fences []*model.Fence) []error {
	if f.during != nil {
		f.during(ctx)
	}
	users := make([]int64, len(orders))
	out := make([]error, len(orders))
	for i := range orders {
		users[i] = orders[i].UserID
		if f.err != nil {
			out[i] = f.err
			continue
		}
		out[i] = f.orders.CreateOrder(ctx, &orders[i], fences[i])
	}
	f.mu.Lock()
	f.groups = append(f.groups, users)
	f.mu.Unlock()
	return out
}

func (f *fakeGroups) calls() [][]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]int64(nil), f.groups...)
}

// groupObserver is the rig's observer with the group sizes.
type groupObserver struct {
	*ordertest.Observer
	mu    sync.Mutex
	sizes []int
}

func (o *groupObserver) SyncGroupCommitted(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sizes = append(o.sizes, n)
}

func (o *groupObserver) all() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int(nil), o.sizes...)
}

// newGroupRig is newRig with group commit on.
func newGroupRig(t *testing.T, cfg SyncSeckillConfig) (*rig, *fakeGroups, *groupObserver) {
	t.Helper()
	r := newRig(t, cfg)
	g := &fakeGroups{orders: r.orders}
	obs := &groupObserver{Observer: r.obs}
	r.svc = NewSyncSeckill(SyncSeckillDeps{
		Vouchers: r.vouchers, Orders: r.orders, Groups: g, IDs: r.ids, Locker: r.locker,
		Rejects: r.rejects, Observer: obs, Now: r.clock.Now, Log: servicetest.DiscardLog(),
	}, cfg)
	return r, g, obs
}

// holdFirstCreate makes the first CreateOrder wait until the returned
// function is called; started is closed once it waits.
func holdFirstCreate(r *rig) (started <-chan struct{}, release func()) {
	st, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.orders.During = func() {
		first := false
		once.Do(func() { first = true })
		if first {
			close(st)
			<-gate
		}
	}
	var rel sync.Once
	return st, func() { rel.Do(func() { close(gate) }) }
}

// buyFirstHeld buys for user 1 in the background, its answer sent to
// done. It returns once that order's commit is held; release lets it go on.
func buyFirstHeld(r *rig, done chan<- error) (release func()) {
	started, release := holdFirstCreate(r)
	go func() {
		_, err := r.svc.Buy(context.Background(), 1, voucherOpen)
		done <- err
	}()
	<-started
	return release
}

// buyBehindFirst buys for users[0], holds its commit, and queues the others
// one by one behind it in arrival order. Then it releases the commit and
// returns each buyer's answer.
func buyBehindFirst(t *testing.T, r *rig, users ...int64) []error {
	t.Helper()
	started, release := holdFirstCreate(r)
	defer release()
	var wg sync.WaitGroup
	errs := make([]error, len(users))
	buy := func(i int) {
		defer wg.Done()
		_, errs[i] = r.svc.Buy(context.Background(), users[i], voucherOpen)
	}
	wg.Add(1)
	go buy(0)
	<-started
	for i := 1; i < len(users); i++ {
		wg.Add(1)
		go buy(i)
		waitQueued(t, r.svc, voucherOpen, i)
	}
	release()
	wg.Wait()
	return errs
}

// waitQueued polls until n buyers of voucher wait in the committer.
func waitQueued(t *testing.T, s *SyncSeckill, voucher int64, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		q := s.group.queues[voucher]
		got := 0
		if q != nil {
			got = len(q.waiting)
		}
		s.group.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting buyers: got %d, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGroupLoneBuyerCommitsAlone(t *testing.T) {
	r, g, obs := newGroupRig(t, SyncSeckillConfig{})
	for user := int64(1); user <= 3; user++ {
		if _, err := r.svc.Buy(context.Background(), user, voucherOpen); err != nil {
			t.Fatalf("user %d: got %v, want nil", user, err)
		}
	}
	if calls := g.calls(); len(calls) != 0 {
		t.Errorf("group transactions: got %v, want none (a lone buyer writes its order alone)", calls)
	}
	if n := len(r.orders.CreateCalls()); n != 3 {
		t.Errorf("one-order transactions: got %d, want 3", n)
	}
	if got := obs.all(); len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Errorf("group sizes: got %v, want [1 1 1]", got)
	}
	r.svc.group.mu.Lock()
	left := len(r.svc.group.queues)
	r.svc.group.mu.Unlock()
	if left != 0 {
		t.Errorf("vouchers still busy: got %d, want 0", left)
	}
	r.assertNoLockHeld(t)
}

func TestGroupFormsFromWaitersInArrivalOrder(t *testing.T) {
	r, g, obs := newGroupRig(t, SyncSeckillConfig{GroupMax: 2})
	errs := buyBehindFirst(t, r, 100, 101, 102, 103, 104, 105)
	for i, err := range errs {
		if err != nil {
			t.Errorf("buyer %d: got %v, want nil", i, err)
		}
	}
	calls := g.calls()
	want := [][]int64{{101, 102}, {103, 104}}
	if len(calls) != len(want) {
		t.Fatalf("groups: got %v, want %v then 105 alone", calls, want)
	}
	for i := range want {
		if len(calls[i]) != 2 || calls[i][0] != want[i][0] || calls[i][1] != want[i][1] {
			t.Errorf("group %d: got %v, want %v", i, calls[i], want[i])
		}
	}
	sizes := obs.all()
	if len(sizes) != 4 || sizes[0] != 1 || sizes[1] != 2 || sizes[2] != 2 || sizes[3] != 1 {
		t.Errorf("group sizes: got %v, want [1 2 2 1]", sizes)
	}
	r.assertWrittenNoLock(t, 6)
}

func TestGroupWaiterGoneBeforeCommitNeverWritten(t *testing.T) {
	r, g, _ := newGroupRig(t, SyncSeckillConfig{})
	done := make(chan error, 2)
	release := buyFirstHeld(r, done)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	var goneID int64
	go func() {
		id, err := r.svc.Buy(ctx, 2, voucherOpen)
		goneID = id
		done <- err
	}()
	waitQueued(t, r.svc, voucherOpen, 1)
	cancel()
	if err := <-done; !errors.Is(err, model.ErrUnavailable) || goneID != 0 {
		t.Fatalf("buyer gone while waiting: got %d, %v, want 0, ErrUnavailable", goneID, err)
	}
	waitQueued(t, r.svc, voucherOpen, 0)
	release()
	if err := <-done; err != nil {
		t.Fatalf("first buyer: got %v, want nil", err)
	}
	for _, o := range r.orders.Orders {
		if o.UserID == 2 {
			t.Errorf("order of the buyer gone before its group: got %+v, want none", o)
		}
	}
	for _, c := range r.orders.CreateCalls() {
		if c.Order.UserID == 2 {
			t.Errorf("the gone buyer's order reached the store: %+v", c.Order)
		}
	}
	if calls := g.calls(); len(calls) != 0 {
		t.Errorf("group transactions: got %v, want none", calls)
	}
	r.assertNoLockHeld(t)
}

func TestGroupWaiterGoneWhileCommittingGetsOutcome(t *testing.T) {
	r, g, _ := newGroupRig(t, SyncSeckillConfig{})
	groupStarted, groupGate := make(chan struct{}), make(chan struct{})
	var groupCtxErr error
	g.during = func(ctx context.Context) {
		close(groupStarted)
		<-groupGate
		groupCtxErr = ctx.Err()
	}
	done := make(chan error, 1)
	release := buyFirstHeld(r, done)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		id  int64
		err error
	}
	answers := make(chan answer, 2)
	for _, user := range []int64{2, 3} {
		bctx := context.Background()
		if user == 2 {
			bctx = ctx
		}
		go func() {
			id, err := r.svc.Buy(bctx, user, voucherOpen)
			answers <- answer{id, err}
		}()
		waitQueued(t, r.svc, voucherOpen, int(user-1))
	}
	release()
	<-groupStarted
	cancel() // buyer 2 goes while its group commits
	close(groupGate)
	if err := <-done; err != nil {
		t.Fatalf("first buyer: got %v, want nil", err)
	}
	for range 2 {
		if a := <-answers; a.err != nil || a.id == 0 {
			t.Errorf("grouped buyer: got %d, %v, want an order id and nil", a.id, a.err)
		}
	}
	if groupCtxErr != nil {
		t.Errorf("group transaction's context: got %v, want alive after one buyer went", groupCtxErr)
	}
	r.assertWrittenNoLock(t, 3)
}

func TestGroupUndecidedOrdersWrittenAlone(t *testing.T) {
	r, g, _ := newGroupRig(t, SyncSeckillConfig{})
	g.err = model.ErrNotGrouped
	errs := buyBehindFirst(t, r, 10, 11, 12)
	for i, err := range errs {
		if err != nil {
			t.Errorf("buyer %d: got %v, want nil (written alone)", i, err)
		}
	}
	if calls := g.calls(); len(calls) != 1 || len(calls[0]) != 2 {
		t.Errorf("group transactions: got %v, want one of 2", calls)
	}
	r.assertWrittenNoLock(t, 3)
}
