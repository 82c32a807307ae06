package async

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"seckill/lock"
	"seckill/model"
)

// Unit tests of reconciliation and rebuilds over an in-memory Redis, stream and
// database. Hooks move the facts at chosen points. They show which
// interleavings the reconciler survives.

// reconWorld is the shared state of the fakes.
type reconWorld struct {
	mu sync.Mutex
	// Redis
	runID  string
	epoch  string
	states map[int64]*reconVoucher
	stream []model.QueuedOrder
	loads  map[int64]int // Load calls per voucher
	// database
	dbEpoch string
	values  map[string]string            // named values other than the epoch
	orders  map[int64]model.VoucherOrder // by order id
	live    []model.SeckillVoucher
	// onRedisRead runs (under mu) before each read of the vouchers' Redis
	// state: the sale moves between checks.
	onRedisRead func(w *reconWorld)
	// afterDBRead runs under mu after each database read, once armed. Freezing
	// a voucher arms it: an order commits while a rebuild reads the facts.
	afterDBRead func(w *reconWorld)
	armed       bool
	// beforeDBRead runs (under mu) before each database read.
	beforeDBRead func(w *reconWorld)
	// fence is the loss fence every rebuild moves.
	fence reconFence
}

type reconVoucher struct {
	state  string
	stock  int64
	buyers map[int64]bool
}

func (w *reconWorld) dbBefore() {
	if w.beforeDBRead != nil {
		w.beforeDBRead(w)
	}
}

func (w *reconWorld) dbRead() {
	if w.armed && w.afterDBRead != nil {
		f := w.afterDBRead
		w.afterDBRead = nil
		f(w)
	}
}

func (w *reconWorld) redisVoucher(id int64) model.RedisVoucher {
	v, ok := w.states[id]
	if !ok {
		return model.RedisVoucher{}
	}
	return model.RedisVoucher{Exists: true, State: v.state, StockExists: true, Stock: v.stock, Buyers: int64(len(v.buyers))}
}

// admit is an admission through the script: stock down, buyer in, entry
// appended.
func (w *reconWorld) admit(vid, user, orderID int64) {
	v := w.states[vid]
	v.stock--
	v.buyers[user] = true
	w.stream = append(w.stream, model.QueuedOrder{MsgID: "m" + time.Now().Format("150405.000000000"), OrderID: orderID, UserID: user, VoucherID: vid})
}

// drain writes the oldest entry's order and acknowledges it.
func (w *reconWorld) drain() {
	e := w.stream[0]
	w.orders[e.OrderID] = model.VoucherOrder{ID: e.OrderID, UserID: e.UserID, VoucherID: e.VoucherID}
	w.stream = w.stream[1:]
}

// reconRedis is the Redis side (AsyncState).
type reconRedis struct {
	AsyncState
	w *reconWorld
}

func (r *reconRedis) Voucher(_ context.Context, id int64) (model.RedisVoucher, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.redisVoucher(id), nil
}

func (r *reconRedis) Vouchers(_ context.Context, ids []int64) (map[int64]model.RedisVoucher, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.readRedis(ids), nil
}

// readRedis is one atomic read of the vouchers' Redis state; mu is held.
func (w *reconWorld) readRedis(ids []int64) map[int64]model.RedisVoucher {
	if w.onRedisRead != nil {
		w.onRedisRead(w)
	}
	out := map[int64]model.RedisVoucher{}
	for _, id := range ids {
		out[id] = w.redisVoucher(id)
	}
	return out
}

func (r *reconRedis) SetState(_ context.Context, id int64, state string) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	v, ok := r.w.states[id]
	if !ok {
		v = &reconVoucher{buyers: map[int64]bool{}}
		r.w.states[id] = v
	}
	v.state = state
	if state == model.VoucherStateFrozen {
		r.w.armed = true
	}
	return nil
}

func (r *reconRedis) Load(_ context.Context, sv *model.SeckillVoucher, stock int64, buyers, _ []int64) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	v := &reconVoucher{state: model.VoucherStateOK, stock: stock, buyers: map[int64]bool{}}
	for _, b := range buyers {
		v.buyers[b] = true
	}
	r.w.states[sv.VoucherID] = v
	r.w.loads[sv.VoucherID]++
	return nil
}

func (r *reconRedis) Epoch(context.Context) (string, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.epoch, nil
}

func (r *reconRedis) LegacyEpoch(context.Context) (string, error) { return "", nil }

func (r *reconRedis) SetEpoch(_ context.Context, e string) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.epoch = e
	return nil
}

// reconQueue is the stream (OrderQueue).
type reconQueue struct {
	OrderQueue
	w *reconWorld
}

func (q *reconQueue) Entries(context.Context) ([]model.QueuedOrder, error) {
	q.w.mu.Lock()
	defer q.w.mu.Unlock()
	return slices.Clone(q.w.stream), nil
}

func (q *reconQueue) Snapshot(_ context.Context, ids []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error) {
	q.w.mu.Lock()
	defer q.w.mu.Unlock()
	return q.w.readRedis(ids), slices.Clone(q.w.stream), nil
}

// reconOrders is the database (AsyncOrderStore).
type reconOrders struct {
	AsyncOrderStore
	w *reconWorld
}

func (o *reconOrders) written(entries []model.QueuedOrder) map[int64]bool {
	out := map[int64]bool{}
	for _, e := range entries {
		if got, ok := o.w.orders[e.OrderID]; ok && got.UserID == e.UserID && got.VoucherID == e.VoucherID {
			out[e.OrderID] = true
		}
	}
	return out
}

func (o *reconOrders) Written(_ context.Context, entries []model.QueuedOrder) (map[int64]bool, error) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	o.w.dbBefore()
	defer o.w.dbRead()
	return o.written(entries), nil
}

func (o *reconOrders) buyers(vid int64) []int64 {
	var out []int64
	for _, v := range o.w.orders {
		if v.VoucherID == vid {
			out = append(out, v.UserID)
		}
	}
	return out
}

func (o *reconOrders) Buyers(_ context.Context, vid int64) ([]int64, error) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	o.w.dbBefore()
	defer o.w.dbRead()
	return o.buyers(vid), nil
}

func (o *reconOrders) CountByVoucher(_ context.Context, ids []int64) (map[int64]int64, error) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	o.w.dbBefore()
	defer o.w.dbRead()
	out := map[int64]int64{}
	for _, id := range ids {
		if n := len(o.buyers(id)); n > 0 {
			out[id] = int64(n)
		}
	}
	return out, nil
}

func (o *reconOrders) OrderFacts(_ context.Context, ids []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error) {
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	o.w.dbBefore()
	defer o.w.dbRead()
	f := model.OrderFacts{Orders: map[int64]int64{}, Written: o.written(entries)}
	if buyers {
		f.Buyers = map[int64][]int64{}
	}
	for _, id := range ids {
		b := o.buyers(id)
		if len(b) > 0 {
			f.Orders[id] = int64(len(b))
		}
		if buyers {
			f.Buyers[id] = b
		}
	}
	return f, nil
}

// reconVouchers lists the live vouchers (AsyncVoucherStore).
type reconVouchers struct {
	AsyncVoucherStore
	w *reconWorld
}

func (v *reconVouchers) ListLive(context.Context, time.Time) ([]model.SeckillVoucher, error) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	return slices.Clone(v.w.live), nil
}

func (v *reconVouchers) GetSeckill(_ context.Context, id int64) (*model.SeckillVoucher, error) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	for _, sv := range v.w.live {
		if sv.VoucherID == id {
			return &sv, nil
		}
	}
	return nil, model.ErrVoucherNotFound
}

// reconValues is the database's named values (NamedValues).
type reconValues struct{ w *reconWorld }

func (m *reconValues) Get(context.Context, string) (string, error) {
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	return m.w.dbEpoch, nil
}

func (m *reconValues) InsertIfAbsent(_ context.Context, name, value string) error {
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	if name != EpochName {
		if m.w.values == nil {
			m.w.values = map[string]string{}
		}
		if _, ok := m.w.values[name]; !ok {
			m.w.values[name] = value
		}
		return nil
	}
	if m.w.dbEpoch == "" {
		m.w.dbEpoch = value
	}
	return nil
}

const reconVID = 7

// newReconWorld is voucher 7, initial stock 10, with 3 orders written and 2
// pending. Its Redis state matches (stock 5, 5 buyers) and the epochs are
// equal.
func newReconWorld() *reconWorld {
	w := &reconWorld{
		epoch: "e1", dbEpoch: "e1",
		states: map[int64]*reconVoucher{}, loads: map[int64]int{},
		orders: map[int64]model.VoucherOrder{},
		live:   []model.SeckillVoucher{{VoucherID: reconVID, InitialStock: 10, Stock: 10}},
	}
	v := &reconVoucher{state: model.VoucherStateOK, stock: 5, buyers: map[int64]bool{}}
	for u := int64(1); u <= 5; u++ {
		v.buyers[u] = true
	}
	w.states[reconVID] = v
	for u := int64(1); u <= 3; u++ {
		w.orders[100+u] = model.VoucherOrder{ID: 100 + u, UserID: u, VoucherID: reconVID}
	}
	for u := int64(4); u <= 5; u++ {
		w.stream = append(w.stream, model.QueuedOrder{MsgID: "m" + string(rune('0'+u)), OrderID: 100 + u, UserID: u, VoucherID: reconVID})
	}
	return w
}

func newReconciler(t *testing.T, w *reconWorld) *Reconciler {
	t.Helper()
	rl, err := lock.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	return NewReconciler(ReconcilerDeps{
		Vouchers: &reconVouchers{w: w}, Orders: &reconOrders{w: w},
		Redis: &reconRedis{w: w}, Queue: &reconQueue{w: w}, Values: &reconValues{w: w},
		Fence: &w.fence, Lock: rl, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// TestRebuildCountsAnOrderCommittedDuringTheReadOnce: a pending order commits
// while the rebuild reads the facts. It must count once, as written, not also
// as pending. Counted twice, it would leave the stock one unit low forever.
func TestRebuildCountsAnOrderCommittedDuringTheReadOnce(t *testing.T) {
	w := newReconWorld()
	w.afterDBRead = func(w *reconWorld) {
		// The consumer commits order 104 (its entry is still in the
		// stream: it is acknowledged after the commit).
		w.orders[104] = model.VoucherOrder{ID: 104, UserID: 4, VoucherID: reconVID}
	}
	s := newReconciler(t, w)
	rv, err := s.Rebuild(context.Background(), reconVID)
	if err != nil {
		t.Fatal(err)
	}
	// 4 orders written + 1 pending (105) = 5 sold of 10.
	if rv.Stock != 5 || rv.Buyers != 5 {
		t.Errorf("after rebuild: got stock %d, buyers %d, want 5 and 5 (10 − 4 written − 1 pending)", rv.Stock, rv.Buyers)
	}
}

// TestCheckRebuildsAStaleVoucherOnSale: a voucher one unit off is rebuilt
// during its sale. Its Redis stock missed sales, and each check sees other
// counts as orders flow. But the residual (stock + orders + pending − initial)
// stays one. Trusting a voucher because its counts move would leave it stale.
func TestCheckRebuildsAStaleVoucherOnSale(t *testing.T) {
	w := newReconWorld()
	w.states[reconVID].stock = 6 // one too many
	next := int64(6)
	w.onRedisRead = func(w *reconWorld) {
		if w.states[reconVID].state != model.VoucherStateOK || w.states[reconVID].stock == 0 {
			return
		}
		w.admit(reconVID, next, 100+next)
		w.drain()
		next++
	}
	s := newReconciler(t, w)
	if err := s.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.loads[reconVID] != 1 {
		t.Fatalf("got %d rebuilds, want 1 (a constant residual of 1 is a stale state, moving counts or not)", w.loads[reconVID])
	}
	rv := w.redisVoucher(reconVID)
	orders := int64(len((&reconOrders{w: w}).buyers(reconVID)))
	if rv.Stock+orders+int64(len(w.stream)) != 10 {
		t.Errorf("after rebuild: stock %d + orders %d + pending %d, want 10", rv.Stock, orders, len(w.stream))
	}
}

// TestCheckTrustsAVoucherOnSale: a race between the reads shows a residual
// once. The order is admitted after the Redis read and written before the
// database read. The next check finds the state consistent, so there is no
// rebuild. A rebuild would freeze the voucher and refuse buyers for a moment.
func TestCheckTrustsAVoucherOnSale(t *testing.T) {
	w := newReconWorld()
	w.beforeDBRead = func(w *reconWorld) {
		w.beforeDBRead = nil
		w.admit(reconVID, 51, 151)
		w.stream = w.stream[:len(w.stream)-1]
		w.orders[151] = model.VoucherOrder{ID: 151, UserID: 51, VoucherID: reconVID}
	}
	s := newReconciler(t, w)
	if err := s.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.loads[reconVID] != 0 {
		t.Errorf("got %d rebuilds, want 0 (the voucher is consistent, only on sale)", w.loads[reconVID])
	}
}

// reconSeq counts the resyncs of the order-id sequence (IDSequence).
type reconSeq struct{ resyncs int }

func (s *reconSeq) Resync(context.Context) error { s.resyncs++; return nil }

// addVoucher makes voucher vid (initial stock initial) live with a
// matching Redis state and no orders.
func (w *reconWorld) addVoucher(vid int64, initial int) {
	w.live = append(w.live, model.SeckillVoucher{VoucherID: vid, InitialStock: initial, Stock: initial})
	w.states[vid] = &reconVoucher{state: model.VoucherStateOK, stock: int64(initial), buyers: map[int64]bool{}}
}

// TestReconcileEpochs: what a start does for each epoch case. One voucher's
// Redis state matches the facts (stock 5: 10 − 3 written − 2 pending). The
// other voucher has no orders.
func TestReconcileEpochs(t *testing.T) {
	tests := []struct {
		name               string
		dbEpoch, redisEp   string
		wantLoads          int // per voucher
		wantState          string
		wantResyncs        int
		wantEpochInRedis   func(w *reconWorld) string
		wantDBEpochCreated bool
	}{
		// Redis intact: each voucher checked, consistent, left alone.
		{name: "equal", dbEpoch: "e1", redisEp: "e1", wantLoads: 0, wantState: model.VoucherStateOK},
		// First async start: a new epoch in the database, then in Redis,
		// and every live voucher rebuilt from the facts.
		{name: "none in the database", dbEpoch: "", redisEp: "", wantLoads: 1, wantState: model.VoucherStateOK, wantDBEpochCreated: true},
		{name: "none in the database, a stale one in redis", dbEpoch: "", redisEp: "old", wantLoads: 1, wantState: model.VoucherStateOK, wantDBEpochCreated: true},
		// Redis lost its data (or is another Redis): every live voucher
		// unsafe, nothing rebuilt, the id sequence moved past the
		// database's ids.
		{name: "another in redis", dbEpoch: "e1", redisEp: "e2", wantLoads: 0, wantState: model.VoucherStateUnsafe, wantResyncs: 1},
		{name: "none in redis", dbEpoch: "e1", redisEp: "", wantLoads: 0, wantState: model.VoucherStateUnsafe, wantResyncs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newReconWorld()
			w.addVoucher(8, 4)
			w.dbEpoch, w.epoch = tt.dbEpoch, tt.redisEp
			seq := &reconSeq{}
			r := newReconciler(t, w)
			r.d.Sequence = seq
			if err := r.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			if w.dbEpoch == "" || w.epoch != w.dbEpoch {
				t.Errorf("epochs after: database %q, redis %q, want equal and set", w.dbEpoch, w.epoch)
			}
			if tt.wantDBEpochCreated == (w.dbEpoch == tt.dbEpoch) {
				t.Errorf("database epoch: %q before, %q after; created: want %v", tt.dbEpoch, w.dbEpoch, tt.wantDBEpochCreated)
			}
			if seq.resyncs != tt.wantResyncs {
				t.Errorf("id sequence resyncs: got %d, want %d", seq.resyncs, tt.wantResyncs)
			}
			for _, vid := range []int64{reconVID, 8} {
				if w.loads[vid] != tt.wantLoads {
					t.Errorf("voucher %d: got %d rebuilds, want %d", vid, w.loads[vid], tt.wantLoads)
				}
				if got := w.states[vid].state; got != tt.wantState {
					t.Errorf("voucher %d: state %q, want %q", vid, got, tt.wantState)
				}
			}
			// Rebuilt or kept, the counts are the facts' (a rebuild
			// recomputes them: 10 − 3 written − 2 pending, and 4).
			if got := w.redisVoucher(reconVID); got.Stock != 5 || got.Buyers != 5 {
				t.Errorf("voucher %d: stock %d, buyers %d, want 5 and 5", reconVID, got.Stock, got.Buyers)
			}
			if got := w.redisVoucher(8); got.Stock != 4 || got.Buyers != 0 {
				t.Errorf("voucher 8: stock %d, buyers %d, want 4 and 0", got.Stock, got.Buyers)
			}
		})
	}
}

// TestReconcileVoucherStates: with the epochs equal, some vouchers are rebuilt
// from the facts. They are a voucher missing from Redis, one left frozen, and
// one with a settled residual. An unsafe one stays unsafe, whatever its counts,
// until the operator's Rebuild.
func TestReconcileVoucherStates(t *testing.T) {
	t.Run("frozen", func(t *testing.T) {
		w := newReconWorld()
		w.states[reconVID].state = model.VoucherStateFrozen
		w.states[reconVID].stock = 9 // whatever it holds: rebuilt from the facts
		if err := newReconciler(t, w).Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := w.redisVoucher(reconVID); w.loads[reconVID] != 1 || got.State != model.VoucherStateOK || got.Stock != 5 || got.Buyers != 5 {
			t.Errorf("got %d rebuilds, %+v; want 1 rebuild, state ok, stock 5, buyers 5", w.loads[reconVID], got)
		}
	})
	t.Run("settled mismatch", func(t *testing.T) {
		// No sale moves it: the same residual three checks in a row.
		w := newReconWorld()
		w.states[reconVID].stock = 7
		if err := newReconciler(t, w).Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := w.redisVoucher(reconVID); w.loads[reconVID] != 1 || got.Stock != 5 {
			t.Errorf("got %d rebuilds, stock %d; want 1 rebuild, stock 5", w.loads[reconVID], got.Stock)
		}
	})
	t.Run("not loaded", func(t *testing.T) {
		w := newReconWorld()
		delete(w.states, reconVID)
		if err := newReconciler(t, w).Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := w.redisVoucher(reconVID); w.loads[reconVID] != 1 || got.State != model.VoucherStateOK || got.Stock != 5 {
			t.Errorf("got %d rebuilds, %+v; want 1 rebuild, state ok, stock 5", w.loads[reconVID], got)
		}
	})
	t.Run("unsafe until rebuilt", func(t *testing.T) {
		w := newReconWorld()
		w.states[reconVID].state = model.VoucherStateUnsafe
		w.states[reconVID].stock = 9 // stale counts do not matter: unsafe stays unsafe
		r := newReconciler(t, w)
		for range 2 {
			if err := r.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := w.redisVoucher(reconVID); w.loads[reconVID] != 0 || got.State != model.VoucherStateUnsafe {
				t.Fatalf("after a start: %d rebuilds, state %q; want 0, unsafe", w.loads[reconVID], got.State)
			}
		}
		rv, err := r.Rebuild(context.Background(), reconVID)
		if err != nil {
			t.Fatal(err)
		}
		if w.loads[reconVID] != 1 || rv.State != model.VoucherStateOK || rv.Stock != 5 || rv.Buyers != 5 {
			t.Errorf("after Rebuild: %d rebuilds, %+v; want 1, state ok, stock 5, buyers 5", w.loads[reconVID], rv)
		}
	})
}
