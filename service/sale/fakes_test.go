package sale

import (
	"context"
	"sync"
	"sync/atomic"

	"seckill/lock"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// Hand-written fakes of the order store, the id generator, the rejection
// counter (orderkit's) and of lock.Locker.
// Each records what the service did to it so that tests can assert the flow.

// events records the order of calls across fakes ("obtain", "create",
// "release").
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// createCall is one CreateOrder call as the store saw it.
type createCall struct {
	order  model.VoucherOrder
	fence  *model.Fence
	ctxErr error
}

// fakeOrders is an orderkit.OrderStore. CreateOrder returns createErr when set, else it
// applies the real transaction's rules on maps. One order per user and voucher;
// the stock is decremented if positive.
type fakeOrders struct {
	mu        sync.Mutex
	ev        *events
	vouchers  *catalogtest.Vouchers
	createErr error
	// during runs inside CreateOrder, before it returns (e.g. to cancel the
	// request context while the transaction runs).
	during  func()
	calls   []createCall
	orders  map[int64]model.VoucherOrder
	getErr  error
	counts  [2]int64
	countEr error
}

func newFakeOrders(ev *events, v *catalogtest.Vouchers) *fakeOrders {
	return &fakeOrders{ev: ev, vouchers: v, orders: map[int64]model.VoucherOrder{}}
}

func (f *fakeOrders) CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
	if f.ev != nil {
		f.ev.add("create")
	}
	if f.during != nil {
		f.during()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var fc *model.Fence
	if fence != nil {
		cp := *fence
		fc = &cp
	}
	f.calls = append(f.calls, createCall{order: *o, fence: fc, ctxErr: ctx.Err()})
	if f.createErr != nil {
		return f.createErr
	}
	for _, x := range f.orders {
		if x.UserID == o.UserID && x.VoucherID == o.VoucherID {
			return model.ErrDuplicateOrder
		}
	}
	if f.vouchers != nil {
		if err := f.vouchers.Take(o.VoucherID); err != nil {
			return err
		}
	}
	f.orders[o.ID] = *o
	return nil
}

func (f *fakeOrders) createCalls() []createCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]createCall(nil), f.calls...)
}

func (f *fakeOrders) GetOrder(_ context.Context, id int64) (*model.VoucherOrder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.getErr != nil {
		return nil, f.getErr
	}
	o, ok := f.orders[id]
	if !ok {
		return nil, model.ErrOrderNotFound
	}
	return &o, nil
}

// VoucherSnapshot reads the stock from the vouchers and the counts from counts.
func (f *fakeOrders) VoucherSnapshot(ctx context.Context, voucherID int64, _ []model.QueuedOrder) (model.VoucherSnapshot, error) {
	sv, err := f.vouchers.GetSeckill(ctx, voucherID)
	if err != nil {
		return model.VoucherSnapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return model.VoucherSnapshot{Stock: sv.Stock, InitialStock: sv.InitialStock, Orders: f.counts[0], DistinctUsers: f.counts[1]}, f.countEr
}

// fakeRejects is an orderkit.RejectionCounter.
type fakeRejects struct {
	mu      sync.Mutex
	counts  map[int64]int64
	ctxErrs []error
	incrErr error
	readErr error
}

func newFakeRejects() *fakeRejects { return &fakeRejects{counts: map[int64]int64{}} }

func (f *fakeRejects) IncrDuplicateRejections(ctx context.Context, voucherID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxErrs = append(f.ctxErrs, ctx.Err())
	if f.incrErr != nil {
		return f.incrErr
	}
	f.counts[voucherID]++
	return nil
}

func (f *fakeRejects) DuplicateRejections(_ context.Context, voucherID int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil {
		return 0, f.readErr
	}
	return f.counts[voucherID], nil
}

func (f *fakeRejects) count(voucherID int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[voucherID]
}

// fakeIDs is an orderkit.IDGenerator counting up from base.
type fakeIDs struct {
	n   atomic.Int64
	err error
}

func (f *fakeIDs) NextID(context.Context) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	return 1<<40 + f.n.Add(1), nil
}

// fakeObserver counts the observed events.
type fakeObserver struct {
	lockNotObtained, uniqueKey, staleFence atomic.Int64
}

func (o *fakeObserver) LockNotObtained()    { o.lockNotObtained.Add(1) }
func (o *fakeObserver) UniqueKeyRejected()  { o.uniqueKey.Add(1) }
func (o *fakeObserver) StaleFenceRejected() { o.staleFence.Add(1) }

// releaseCall is one Release call as the lock saw it.
type releaseCall struct {
	key         string
	ctxErr      error
	hasDeadline bool
}

// fakeLocker is a lock.Locker. With obtainErr set Obtain fails with it;
// otherwise it grants every request (it is not a real lock) and records it.
type fakeLocker struct {
	ev        *events
	obtainErr error
	token     int64
	hasToken  bool
	// during runs inside Obtain (e.g. to end the request context while the
	// lock is being taken).
	during func()

	obtains atomic.Int64
	mu      sync.Mutex
	keys    []string
	held    map[string]int
	rels    []releaseCall
}

func newFakeLocker(ev *events) *fakeLocker { return &fakeLocker{ev: ev, held: map[string]int{}} }

func (l *fakeLocker) Name() string { return "fake" }

func (l *fakeLocker) Obtain(_ context.Context, key string) (lock.Lock, error) {
	l.obtains.Add(1)
	if l.ev != nil {
		l.ev.add("obtain")
	}
	if l.during != nil {
		l.during()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, key)
	if l.obtainErr != nil {
		return nil, l.obtainErr
	}
	l.held[key]++
	return &fakeLock{l: l, key: key}, nil
}

// heldCount is the number of locks obtained and not released.
func (l *fakeLocker) heldCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.held {
		n += c
	}
	return n
}

func (l *fakeLocker) releases() []releaseCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]releaseCall(nil), l.rels...)
}

type fakeLock struct {
	l        *fakeLocker
	key      string
	released bool
}

func (k *fakeLock) Key() string { return k.key }

func (k *fakeLock) Token() (int64, bool) { return k.l.token, k.l.hasToken }

func (k *fakeLock) Release(ctx context.Context) error {
	if k.l.ev != nil {
		k.l.ev.add("release")
	}
	_, dl := ctx.Deadline()
	k.l.mu.Lock()
	defer k.l.mu.Unlock()
	k.l.rels = append(k.l.rels, releaseCall{key: k.key, ctxErr: ctx.Err(), hasDeadline: dl})
	if k.released {
		return lock.ErrNotHeld
	}
	k.released = true
	k.l.held[k.key]--
	return nil
}
