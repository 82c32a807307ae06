// Package ordertest holds the fakes of the interfaces that the order kernel
// (service/internal/orderkit) declares: the order store, the id generator, the
// rejection counter and the observer. The tests of service/sale and
// service/async share them. Each records what the service did to it, so
// that a test can assert the flow; its exported error fields make its calls
// fail.
package ordertest

import (
	"context"
	"sync"
	"sync/atomic"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// Events records the order of calls across fakes ("obtain", "create",
// "release").
type Events struct {
	mu   sync.Mutex
	list []string
}

func (e *Events) Add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *Events) All() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// CreateCall is one CreateOrder call as the store saw it.
type CreateCall struct {
	Order  model.VoucherOrder
	Fence  *model.Fence
	CtxErr error
}

// Orders is an orderkit.OrderStore. CreateOrder returns CreateErr when set,
// else it applies the real transaction's rules on maps: one order per user
// and voucher, one unit of Vouchers' stock taken if any is left.
type Orders struct {
	mu        sync.Mutex
	Ev        *Events
	Vouchers  *catalogtest.Vouchers
	CreateErr error
	// During runs inside CreateOrder, before it returns (e.g. to cancel the
	// request context while the transaction runs).
	During func()
	calls  []CreateCall
	Orders map[int64]model.VoucherOrder
	GetErr error
	// Counts are VoucherSnapshot's orders and distinct users.
	Counts   [2]int64
	CountErr error
}

// NewOrders returns an empty store that records its calls in ev (nil: none)
// and takes the stock of v.
func NewOrders(ev *Events, v *catalogtest.Vouchers) *Orders {
	return &Orders{Ev: ev, Vouchers: v, Orders: map[int64]model.VoucherOrder{}}
}

func (f *Orders) CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
	if f.Ev != nil {
		f.Ev.Add("create")
	}
	if f.During != nil {
		f.During()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var fc *model.Fence
	if fence != nil {
		cp := *fence
		fc = &cp
	}
	f.calls = append(f.calls, CreateCall{Order: *o, Fence: fc, CtxErr: ctx.Err()})
	if f.CreateErr != nil {
		return f.CreateErr
	}
	for _, x := range f.Orders {
		if x.UserID == o.UserID && x.VoucherID == o.VoucherID {
			return model.ErrDuplicateOrder
		}
	}
	if f.Vouchers != nil {
		if err := f.Vouchers.Take(o.VoucherID); err != nil {
			return err
		}
	}
	f.Orders[o.ID] = *o
	return nil
}

// SetGetErr makes the next GetOrder calls fail with err (nil: answer).
func (f *Orders) SetGetErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.GetErr = err
}

// CreateCalls lists the CreateOrder calls so far.
func (f *Orders) CreateCalls() []CreateCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CreateCall(nil), f.calls...)
}

func (f *Orders) GetOrder(_ context.Context, id int64) (*model.VoucherOrder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.GetErr != nil {
		return nil, f.GetErr
	}
	o, ok := f.Orders[id]
	if !ok {
		return nil, model.ErrOrderNotFound
	}
	return &o, nil
}

// VoucherSnapshot reads the stock from Vouchers and the counts from Counts.
func (f *Orders) VoucherSnapshot(ctx context.Context, voucherID int64, _ []model.QueuedOrder) (model.VoucherSnapshot, error) {
	sv, err := f.Vouchers.GetSeckill(ctx, voucherID)
	if err != nil {
		return model.VoucherSnapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return model.VoucherSnapshot{Stock: sv.Stock, InitialStock: sv.InitialStock, Orders: f.Counts[0], Unpaid: f.Counts[0], DistinctUsers: f.Counts[1]}, f.CountErr
}

// Rejects is an orderkit.RejectionCounter over a map, Counts, that a test
// may seed.
type Rejects struct {
	mu      sync.Mutex
	Counts  map[int64]int64
	ctxErrs []error
	IncrErr error
	ReadErr error
}

// NewRejects returns a counter at zero.
func NewRejects() *Rejects { return &Rejects{Counts: map[int64]int64{}} }

func (f *Rejects) IncrDuplicateRejections(ctx context.Context, voucherID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxErrs = append(f.ctxErrs, ctx.Err())
	if f.IncrErr != nil {
		return f.IncrErr
	}
	f.Counts[voucherID]++
	return nil
}

func (f *Rejects) DuplicateRejections(_ context.Context, voucherID int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ReadErr != nil {
		return 0, f.ReadErr
	}
	return f.Counts[voucherID], nil
}

// CtxErrs lists the context errors IncrDuplicateRejections saw, one a call.
func (f *Rejects) CtxErrs() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.ctxErrs...)
}

// Count is voucherID's count.
func (f *Rejects) Count(voucherID int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Counts[voucherID]
}

// IDs is an orderkit.IDGenerator counting up from 1<<40.
type IDs struct {
	n   atomic.Int64
	Err error
}

func (f *IDs) NextID(context.Context) (int64, error) {
	if f.Err != nil {
		return 0, f.Err
	}
	return 1<<40 + f.n.Add(1), nil
}

// Observer counts the observed events.
type Observer struct {
	NotObtained, UniqueKeys, StaleFences atomic.Int64
}

func (o *Observer) LockNotObtained()    { o.NotObtained.Add(1) }
func (o *Observer) UniqueKeyRejected()  { o.UniqueKeys.Add(1) }
func (o *Observer) StaleFenceRejected() { o.StaleFences.Add(1) }
