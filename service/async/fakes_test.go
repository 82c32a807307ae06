package async

import (
	"context"
	"sync"
	"sync/atomic"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// Hand-written fakes of the order store and the id generator (orderkit's),
// as the async tests need them; service/sale's tests keep the full set,
// with the lock and the rejection counter.

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
