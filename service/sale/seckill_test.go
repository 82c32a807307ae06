package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/ordertest"
	"seckill/service/internal/servicetest"
	"seckill/testkit/testenv"
)

var (
	testBegin = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	testEnd   = testBegin.Add(time.Hour)
)

const (
	voucherOpen    = int64(1) // stock 10, in its window
	voucherSoldOut = int64(2) // stock 0
)

// rig is a SyncSeckill over fakes, every fake reachable for assertions.
type rig struct {
	ev       *ordertest.Events
	vouchers *catalogtest.Vouchers
	orders   *ordertest.Orders
	locker   *fakeLocker
	rejects  *ordertest.Rejects
	ids      *ordertest.IDs
	obs      *ordertest.Observer
	clock    *testenv.Clock
	svc      *SyncSeckill
}

func newRig(t *testing.T, cfg SyncSeckillConfig) *rig {
	t.Helper()
	r := &rig{ev: &ordertest.Events{}, vouchers: catalogtest.NewVouchers(100), rejects: ordertest.NewRejects(), ids: &ordertest.IDs{}, obs: &ordertest.Observer{}}
	r.clock = testenv.NewClock(testBegin.Add(10 * time.Minute))
	r.orders = ordertest.NewOrders(r.ev, r.vouchers)
	r.locker = newFakeLocker(r.ev)
	r.vouchers.Put(model.SeckillVoucher{VoucherID: voucherOpen, Stock: 10, InitialStock: 10, BeginTime: testBegin, EndTime: testEnd})
	r.vouchers.Put(model.SeckillVoucher{VoucherID: voucherSoldOut, Stock: 0, InitialStock: 5, BeginTime: testBegin, EndTime: testEnd})
	r.svc = NewSyncSeckill(SyncSeckillDeps{
		Vouchers: r.vouchers, Orders: r.orders, IDs: r.ids, Locker: r.locker,
		Rejects: r.rejects, Observer: r.obs, Now: r.clock.Now, Log: servicetest.DiscardLog(),
	}, cfg)
	return r
}

// assertWrittenNoLock fails unless n orders are written and no lock is
// left held.
func (r *rig) assertWrittenNoLock(t *testing.T, n int) {
	t.Helper()
	if got := len(r.orders.Orders); got != n {
		t.Errorf("orders written: got %d, want %d", got, n)
	}
	r.assertNoLockHeld(t)
}

// assertNoLockHeld fails when a lock obtained by the service was not released.
func (r *rig) assertNoLockHeld(t *testing.T) {
	t.Helper()
	if n := r.locker.heldCount(); n != 0 {
		t.Errorf("locks still held after Buy: got %d, want 0", n)
	}
}

func TestBuyRefusedBeforeLock(t *testing.T) {
	tests := []struct {
		name      string
		voucherID int64
		now       time.Time
		getErr    error
		wantErr   error  // sentinel, or nil when wantField is set
		wantField string // InvalidArgumentError field
	}{
		{name: "zero id", voucherID: 0, now: testBegin, wantField: "id"},
		{name: "negative id", voucherID: -5, now: testBegin, wantField: "id"},
		{name: "unknown voucher", voucherID: 404, now: testBegin, wantErr: model.ErrVoucherNotFound},
		{name: "not started", voucherID: voucherOpen, now: testBegin.Add(-time.Nanosecond), wantErr: model.ErrSeckillNotStarted},
		{name: "long before", voucherID: voucherOpen, now: testBegin.Add(-24 * time.Hour), wantErr: model.ErrSeckillNotStarted},
		{name: "ended at end time", voucherID: voucherOpen, now: testEnd, wantErr: model.ErrSeckillEnded},
		{name: "ended after", voucherID: voucherOpen, now: testEnd.Add(time.Second), wantErr: model.ErrSeckillEnded},
		{name: "sold out on load", voucherID: voucherSoldOut, now: testBegin, wantErr: model.ErrSoldOut},
		{name: "database down", voucherID: voucherOpen, now: testBegin, getErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.clock.Set(tt.now)
			if tt.getErr != nil {
				r.vouchers.GetErrs = []error{tt.getErr}
			}
			id, err := r.svc.Buy(context.Background(), 7, tt.voucherID)
			if id != 0 {
				t.Errorf("order id: got %d, want 0", id)
			}
			if tt.wantField != "" {
				var ia *model.InvalidArgumentError
				if !errors.As(err, &ia) || ia.Field != tt.wantField {
					t.Fatalf("got %v, want InvalidArgumentError on %q", err, tt.wantField)
				}
			} else if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if n := r.locker.obtains.Load(); n != 0 {
				t.Errorf("lock obtains: got %d, want 0 (refusal before the lock)", n)
			}
			if n := len(r.orders.CreateCalls()); n != 0 {
				t.Errorf("CreateOrder calls: got %d, want 0", n)
			}
		})
	}
}

func TestBuyWindowInclusiveBegin(t *testing.T) {
	tests := []struct {
		name string
		now  time.Time
	}{
		{"at begin", testBegin},
		{"just before end", testEnd.Add(-time.Nanosecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.clock.Set(tt.now)
			if _, err := r.svc.Buy(context.Background(), 7, voucherOpen); err != nil {
				t.Fatalf("got %v, want nil", err)
			}
		})
	}
}

func TestBuySuccess(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	id, err := r.svc.Buy(context.Background(), 7, voucherOpen)
	if err != nil {
		t.Fatalf("Buy: got %v, want nil", err)
	}
	if want := int64(1<<40 + 1); id != want {
		t.Errorf("order id: got %d, want %d (from the ID generator)", id, want)
	}
	calls := r.orders.CreateCalls()
	if len(calls) != 1 {
		t.Fatalf("CreateOrder calls: got %d, want 1", len(calls))
	}
	o := calls[0].Order
	if o.ID != id || o.UserID != 7 || o.VoucherID != voucherOpen || o.Status != model.OrderStatusCreated {
		t.Errorf("order: got id %d user %d voucher %d status %d, want %d 7 %d %d",
			o.ID, o.UserID, o.VoucherID, o.Status, id, voucherOpen, model.OrderStatusCreated)
	}
	if !o.CreateTime.Equal(r.clock.Now()) {
		t.Errorf("create time: got %v, want the injected clock %v", o.CreateTime, r.clock.Now())
	}
	if got, want := r.locker.keys, []string{"lock:order:7"}; !slices.Equal(got, want) {
		t.Errorf("lock keys: got %v, want %v", got, want)
	}
	if got, want := r.ev.All(), []string{"obtain", "create", "release"}; !slices.Equal(got, want) {
		t.Errorf("call order: got %v, want %v", got, want)
	}
	r.assertNoLockHeld(t)
}

func TestBuySoldOutLearnedTakesNoLock(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	r.vouchers.Put(model.SeckillVoucher{VoucherID: 3, Stock: 1, InitialStock: 1, BeginTime: testBegin, EndTime: testEnd})
	ctx := context.Background()
	if _, err := r.svc.Buy(ctx, 1, 3); err != nil {
		t.Fatalf("first buyer: got %v, want nil", err)
	}
	if _, err := r.svc.Buy(ctx, 2, 3); !errors.Is(err, model.ErrSoldOut) {
		t.Fatalf("second buyer: got %v, want %v", err, model.ErrSoldOut)
	}
	obtains := r.locker.obtains.Load()
	creates := len(r.orders.CreateCalls())
	for user := int64(3); user < 10; user++ {
		if _, err := r.svc.Buy(ctx, user, 3); !errors.Is(err, model.ErrSoldOut) {
			t.Fatalf("buyer %d: got %v, want %v", user, err, model.ErrSoldOut)
		}
	}
	if got := r.locker.obtains.Load(); got != obtains {
		t.Errorf("lock obtains after sold out is known: got %d, want %d (no lock)", got, obtains)
	}
	if got := len(r.orders.CreateCalls()); got != creates {
		t.Errorf("CreateOrder calls after sold out is known: got %d, want %d", got, creates)
	}
	r.assertNoLockHeld(t)
}

// checkRefused fails unless a refused Buy returned no order id, and an
// error that does not match notErr (when set).
func checkRefused(t *testing.T, id int64, err, notErr error) {
	t.Helper()
	if notErr != nil && errors.Is(err, notErr) {
		t.Errorf("got %v, must not match %v", err, notErr)
	}
	if id != 0 {
		t.Errorf("order id: got %d, want 0", id)
	}
}

func TestBuyLockRefused(t *testing.T) {
	tests := []struct {
		name         string
		obtainErr    error
		endRequest   bool // the request's context ends while Obtain runs
		wantErr      error
		notErr       error
		wantObserved int64
	}{
		{name: "held by another request", obtainErr: lock.ErrNotObtained, wantErr: model.ErrDuplicateOrder, notErr: model.ErrUnavailable, wantObserved: 1},
		{name: "held, wrapped", obtainErr: fmt.Errorf("lua: %w", lock.ErrNotObtained), wantErr: model.ErrDuplicateOrder, notErr: model.ErrUnavailable, wantObserved: 1},
		{name: "request deadline ended the wait", obtainErr: fmt.Errorf("%w: %w", lock.ErrNotObtained, context.DeadlineExceeded), endRequest: true, wantErr: model.ErrUnavailable, notErr: model.ErrDuplicateOrder},
		{name: "request deadline ended the I/O", obtainErr: fmt.Errorf("lua: %w", context.DeadlineExceeded), endRequest: true, wantErr: model.ErrUnavailable, notErr: model.ErrDuplicateOrder},
		{name: "backend unreachable", obtainErr: fmt.Errorf("lua: %w", servicetest.ErrIO), wantErr: model.ErrUnavailable, notErr: model.ErrDuplicateOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.locker.obtainErr = tt.obtainErr
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.endRequest {
				r.locker.during = cancel
			}
			id, err := r.svc.Buy(ctx, 7, voucherOpen)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			checkRefused(t, id, err, tt.notErr)
			if refused := tt.wantObserved > 0; errors.Is(err, model.ErrLockRefused) != refused {
				t.Errorf("got %v: marked ErrLockRefused %v, want %v", err, !refused, refused)
			}
			if got := r.obs.NotObtained.Load(); got != tt.wantObserved {
				t.Errorf("LockNotObtained observed: got %d, want %d", got, tt.wantObserved)
			}
			if n := len(r.orders.CreateCalls()); n != 0 {
				t.Errorf("CreateOrder calls: got %d, want 0", n)
			}
			if n := len(r.locker.releases()); n != 0 {
				t.Errorf("releases of a lock never obtained: got %d, want 0", n)
			}
		})
	}
}

func TestBuyStoreErrors(t *testing.T) {
	uniqueKey := fmt.Errorf("create order: %w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey)
	tests := []struct {
		name       string
		createErr  error
		wantErrs   []error
		notErr     error
		wantUnique int64
		wantStale  int64
		wantRejent int64 // orderkit.RejectionCounter for the voucher
	}{
		{name: "unique key", createErr: uniqueKey, wantErrs: []error{model.ErrDuplicateOrder, model.ErrUniqueKey}, notErr: model.ErrUnavailable, wantUnique: 1, wantRejent: 1},
		{name: "duplicate found by the transaction", createErr: model.ErrDuplicateOrder, wantErrs: []error{model.ErrDuplicateOrder}, notErr: model.ErrUniqueKey},
		{name: "stale fence", createErr: model.ErrStaleFence, wantErrs: []error{model.ErrStaleFence}, notErr: model.ErrSoldOut, wantStale: 1},
		{name: "sold out", createErr: model.ErrSoldOut, wantErrs: []error{model.ErrSoldOut}, notErr: model.ErrDuplicateOrder},
		{name: "database down", createErr: model.Unavailable(servicetest.ErrIO), wantErrs: []error{model.ErrUnavailable, servicetest.ErrIO}},
		{name: "other driver error", createErr: fmt.Errorf("insert: %w", servicetest.ErrIO), wantErrs: []error{servicetest.ErrIO}, notErr: model.ErrDuplicateOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Fencing on with a token so that the stale-fence path has a fence.
			r := newRig(t, SyncSeckillConfig{Fencing: true})
			r.locker.token, r.locker.hasToken = 41, true
			r.orders.CreateErr = tt.createErr
			id, err := r.svc.Buy(context.Background(), 7, voucherOpen)
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("got %v, want it to match %v", err, want)
				}
			}
			checkRefused(t, id, err, tt.notErr)
			if got := r.obs.UniqueKeys.Load(); got != tt.wantUnique {
				t.Errorf("UniqueKeyRejected observed: got %d, want %d", got, tt.wantUnique)
			}
			if got := r.obs.StaleFences.Load(); got != tt.wantStale {
				t.Errorf("StaleFenceRejected observed: got %d, want %d", got, tt.wantStale)
			}
			if got := r.rejects.Count(voucherOpen); got != tt.wantRejent {
				t.Errorf("duplicate rejections counted: got %d, want %d", got, tt.wantRejent)
			}
			if got, want := r.ev.All(), []string{"obtain", "create", "release"}; !slices.Equal(got, want) {
				t.Errorf("call order: got %v, want %v (release after the transaction, on every path)", got, want)
			}
			r.assertNoLockHeld(t)
		})
	}
}

func TestBuyUniqueKeyCountedDespiteCancelledRequest(t *testing.T) {
	tests := []struct {
		name    string
		incrErr error
	}{
		{"counter works", nil},
		{"counter fails", model.Unavailable(servicetest.ErrIO)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.rejects.IncrErr = tt.incrErr
			r.orders.CreateErr = fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r.orders.During = cancel
			_, err := r.svc.Buy(ctx, 7, voucherOpen)
			if !errors.Is(err, model.ErrDuplicateOrder) {
				t.Fatalf("got %v, want %v (a failing counter must not change the answer)", err, model.ErrDuplicateOrder)
			}
			ctxErrs := r.rejects.CtxErrs()
			if len(ctxErrs) != 1 {
				t.Fatalf("IncrDuplicateRejections calls: got %d, want 1", len(ctxErrs))
			}
			if ctxErrs[0] != nil {
				t.Errorf("counter context: got err %v, want a live context", ctxErrs[0])
			}
			if got := r.obs.UniqueKeys.Load(); got != 1 {
				t.Errorf("UniqueKeyRejected observed: got %d, want 1", got)
			}
			r.assertNoLockHeld(t)
		})
	}
}

func TestBuyFencing(t *testing.T) {
	tests := []struct {
		name      string
		fencing   bool
		hasToken  bool
		wantFence *model.Fence
	}{
		{name: "off, lock has token", fencing: false, hasToken: true},
		{name: "off, no token", fencing: false, hasToken: false},
		{name: "on, no token", fencing: true, hasToken: false},
		{name: "on, token", fencing: true, hasToken: true, wantFence: &model.Fence{Key: "fake|lock:order:7", Token: 99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{Fencing: tt.fencing})
			r.locker.token, r.locker.hasToken = 99, tt.hasToken
			if _, err := r.svc.Buy(context.Background(), 7, voucherOpen); err != nil {
				t.Fatalf("Buy: got %v, want nil", err)
			}
			calls := r.orders.CreateCalls()
			if len(calls) != 1 {
				t.Fatalf("CreateOrder calls: got %d, want 1", len(calls))
			}
			got := calls[0]
			switch {
			case tt.wantFence == nil && got.Fence != nil:
				t.Errorf("fence: got %+v, want nil", *got.Fence)
			case tt.wantFence != nil && (got.Fence == nil || *got.Fence != *tt.wantFence):
				t.Errorf("fence: got %v, want %+v", got.Fence, *tt.wantFence)
			}
			switch {
			case tt.wantFence == nil && got.Order.FenceToken != nil:
				t.Errorf("order fence token: got %d, want nil", *got.Order.FenceToken)
			case tt.wantFence != nil && (got.Order.FenceToken == nil || *got.Order.FenceToken != tt.wantFence.Token):
				t.Errorf("order fence token: got %v, want %d", got.Order.FenceToken, tt.wantFence.Token)
			}
		})
	}
}

func TestBuyReleasesAfterCommitOnLiveContext(t *testing.T) {
	tests := []struct {
		name      string
		createErr error
	}{
		{"success", nil},
		{"sold out", model.ErrSoldOut},
		{"driver error", servicetest.ErrIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.orders.CreateErr = tt.createErr
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The client goes away while the transaction runs.
			r.orders.During = cancel
			_, err := r.svc.Buy(ctx, 7, voucherOpen)
			if !errors.Is(err, tt.createErr) {
				t.Fatalf("got %v, want %v", err, tt.createErr)
			}
			if calls := r.orders.CreateCalls(); len(calls) != 1 || calls[0].CtxErr == nil {
				t.Fatalf("the request context must be cancelled inside CreateOrder for this test: calls %+v", calls)
			}
			if got, want := r.ev.All(), []string{"obtain", "create", "release"}; !slices.Equal(got, want) {
				t.Errorf("call order: got %v, want %v", got, want)
			}
			rels := r.locker.releases()
			if len(rels) != 1 {
				t.Fatalf("releases: got %d, want 1", len(rels))
			}
			if rels[0].ctxErr != nil {
				t.Errorf("release context: got err %v, want a live context", rels[0].ctxErr)
			}
			if !rels[0].hasDeadline {
				t.Errorf("release context deadline: got none, want a bounded release")
			}
			if rels[0].key != "lock:order:7" {
				t.Errorf("released key: got %q, want %q", rels[0].key, "lock:order:7")
			}
			r.assertNoLockHeld(t)
		})
	}
}

func TestBuyCriticalDelay(t *testing.T) {
	t.Run("cancelled while waiting", func(t *testing.T) {
		r := newRig(t, SyncSeckillConfig{CriticalDelay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := r.svc.Buy(ctx, 7, voucherOpen)
		if !errors.Is(err, model.ErrUnavailable) {
			t.Fatalf("got %v, want %v", err, model.ErrUnavailable)
		}
		if n := len(r.orders.CreateCalls()); n != 0 {
			t.Errorf("CreateOrder calls: got %d, want 0", n)
		}
		if got, want := r.ev.All(), []string{"obtain", "release"}; !slices.Equal(got, want) {
			t.Errorf("call order: got %v, want %v", got, want)
		}
		r.assertNoLockHeld(t)
	})
	t.Run("short delay completes", func(t *testing.T) {
		r := newRig(t, SyncSeckillConfig{CriticalDelay: time.Millisecond})
		if _, err := r.svc.Buy(context.Background(), 7, voucherOpen); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		r.assertNoLockHeld(t)
	})
}

func TestBuyIDGeneratorDown(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	r.ids.Err = model.Unavailable(servicetest.ErrIO)
	_, err := r.svc.Buy(context.Background(), 7, voucherOpen)
	if !errors.Is(err, model.ErrUnavailable) {
		t.Fatalf("got %v, want %v", err, model.ErrUnavailable)
	}
	if n := len(r.orders.CreateCalls()); n != 0 {
		t.Errorf("CreateOrder calls: got %d, want 0", n)
	}
	r.assertNoLockHeld(t)
}

func TestBuyManyUsersNoLockLeft(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[error]int{}
	for user := int64(1); user <= 20; user++ {
		for range 3 {
			wg.Go(func() {
				_, err := r.svc.Buy(context.Background(), user, voucherOpen)
				mu.Lock()
				codes[err]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	// The fake locker grants everything, so the fake store's one-order-per-user
	// rule and the stock decide: 10 orders, the rest duplicates or sold out.
	if got := codes[nil]; got != 10 {
		t.Errorf("orders: got %d, want 10 (the stock)", got)
	}
	if got := codes[nil] + codes[model.ErrDuplicateOrder] + codes[model.ErrSoldOut]; got != 60 {
		t.Errorf("answered requests: got %d, want 60 (%v)", got, codes)
	}
	r.assertNoLockHeld(t)
}

func TestOrder(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	id, err := r.svc.Buy(context.Background(), 7, voucherOpen)
	if err != nil {
		t.Fatalf("Buy: %v", err)
	}
	tests := []struct {
		name      string
		userID    int64
		orderID   int64
		getErr    error
		wantErr   error
		wantField string
	}{
		{name: "owner", userID: 7, orderID: id},
		{name: "another user", userID: 8, orderID: id, wantErr: model.ErrOrderNotFound},
		{name: "missing", userID: 7, orderID: id + 1000, wantErr: model.ErrOrderNotFound},
		{name: "zero id", userID: 7, orderID: 0, wantField: "orderId"},
		{name: "database down", userID: 7, orderID: id, getErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.orders.SetGetErr(tt.getErr)
			o, err := r.svc.Order(context.Background(), tt.userID, tt.orderID)
			if servicetest.CheckErr(t, err, tt.wantField, tt.wantErr) {
				if tt.wantErr != nil && o != nil {
					t.Errorf("order: got %+v, want nil", *o)
				}
				return
			}
			if o.ID != id || o.UserID != tt.userID {
				t.Errorf("order: got id %d user %d, want %d %d", o.ID, o.UserID, id, tt.userID)
			}
		})
	}
}

func TestAudit(t *testing.T) {
	tests := []struct {
		name           string
		voucherID      int64
		initial, stock int
		orders, users  int64
		dups           int64
		readErr        error
		wantErr        error
		wantField      string
		wantConsistent bool
		wantOversold   bool
	}{
		{name: "consistent", voucherID: 5, initial: 10, stock: 7, orders: 3, users: 3, dups: 2, wantConsistent: true},
		{name: "oversold", voucherID: 5, initial: 2, stock: 0, orders: 3, users: 3, wantOversold: true},
		{name: "stock and orders disagree", voucherID: 5, initial: 10, stock: 8, orders: 3, users: 3},
		{name: "a user with two orders", voucherID: 5, initial: 10, stock: 7, orders: 3, users: 2},
		{name: "zero id", voucherID: 0, wantField: "id"},
		{name: "unknown voucher", voucherID: 404, wantErr: model.ErrVoucherNotFound},
		{name: "counter down", voucherID: 5, initial: 1, stock: 1, readErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.vouchers.Put(model.SeckillVoucher{VoucherID: 5, Stock: tt.stock, InitialStock: tt.initial, BeginTime: testBegin, EndTime: testEnd})
			r.orders.Counts = [2]int64{tt.orders, tt.users}
			r.rejects.Counts[5] = tt.dups
			r.rejects.ReadErr = tt.readErr
			a, err := r.svc.Audit(context.Background(), tt.voucherID)
			if servicetest.CheckErr(t, err, tt.wantField, tt.wantErr) {
				return
			}
			want := model.Audit{
				VoucherID: 5, InitialStock: tt.initial, Stock: tt.stock, Orders: tt.orders, Unpaid: tt.orders,
				DistinctUsers: tt.users, DuplicateRejections: tt.dups,
				Oversold: tt.wantOversold, Consistent: tt.wantConsistent,
			}
			if *a != want {
				t.Errorf("got %+v, want %+v", *a, want)
			}
		})
	}
}

// TestSoldOutFlagExpires: the sold-out flag lasts a second, not the cache's
// minute. A unit given back, as by an async dead letter, sells again within a
// second.
func TestSoldOutFlagExpires(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	r.vouchers.Put(model.SeckillVoucher{VoucherID: voucherOpen, Stock: 1, InitialStock: 1, BeginTime: testBegin, EndTime: testEnd})
	ctx := context.Background()
	if _, err := r.svc.Buy(ctx, 1, voucherOpen); err != nil {
		t.Fatalf("first buyer: got %v, want an order", err)
	}
	if _, err := r.svc.Buy(ctx, 2, voucherOpen); !errors.Is(err, model.ErrSoldOut) {
		t.Fatalf("second buyer: got %v, want ErrSoldOut", err)
	}
	// The unit comes back (a dead letter gave it back).
	r.vouchers.Put(model.SeckillVoucher{VoucherID: voucherOpen, Stock: 1, InitialStock: 1, BeginTime: testBegin, EndTime: testEnd})
	r.clock.Set(r.clock.Now().Add(2 * time.Second))
	if _, err := r.svc.Buy(ctx, 3, voucherOpen); err != nil {
		t.Errorf("third buyer two seconds after the give-back: got %v, want an order", err)
	}
}
