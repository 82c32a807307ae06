package async

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/internal/orderkit"
)

// Unit tests of the consumers' batch handling (consumer.process) over
// in-memory fakes: which entries are acknowledged, dead-lettered (and with
// which give-back) or left pending.

// consQueue records what process did to the stream.
type consQueue struct {
	mu        sync.Mutex
	acked     []string
	dead      map[string]consDead // msg id -> dead letter
	malformed []string
	// deadErr is returned by DeadLetter when set.
	deadErr error
	// lost holds the entries another consumer took over (Touch drops them).
	lost map[string]bool
	// claimPages are what successive Claim calls return; touches records
	// the entries of each Touch call.
	claimPages [][]model.QueuedOrder
	touches    [][]string
}

type consDead struct {
	reason      string
	attempts    int
	removeBuyer bool
	giveStock   bool // a sold-out dead letter keeps its unit taken
}

func (q *consQueue) EnsureGroup(context.Context) error { return nil }
func (q *consQueue) ReadNew(context.Context, string, int, time.Duration) ([]model.QueuedOrder, error) {
	return nil, nil
}
func (q *consQueue) Claim(context.Context, string, time.Duration, string, int) ([]model.QueuedOrder, string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.claimPages) == 0 {
		return nil, "0-0", nil
	}
	page := q.claimPages[0]
	q.claimPages = q.claimPages[1:]
	return page, "1-0", nil
}
func (q *consQueue) Entries(context.Context) ([]model.QueuedOrder, error) { return nil, nil }
func (q *consQueue) Snapshot(context.Context, []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error) {
	return nil, nil, nil
}
func (q *consQueue) RemoveConsumer(context.Context, string) error { return nil }

// Touch reports every entry owned but those in lost.
func (q *consQueue) Touch(_ context.Context, _ string, msgs []model.QueuedOrder) ([]model.QueuedOrder, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.MsgID)
	}
	q.touches = append(q.touches, ids)
	var out []model.QueuedOrder
	for _, m := range msgs {
		if !q.lost[m.MsgID] {
			out = append(out, m)
		}
	}
	return out, nil
}
func (q *consQueue) PruneConsumers(context.Context, time.Duration) (int, error) {
	return 0, nil
}

func (q *consQueue) Ack(_ context.Context, msgs []model.QueuedOrder) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range msgs {
		q.acked = append(q.acked, m.MsgID)
	}
	return nil
}

func (q *consQueue) DeadLetter(_ context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deadErr != nil {
		return false, q.deadErr
	}
	if _, ok := q.dead[m.MsgID]; ok {
		return false, nil
	}
	q.dead[m.MsgID] = consDead{reason, attempts, give.Buyer, give.Stock}
	return true, nil
}

func (q *consQueue) DeadLetterMalformed(_ context.Context, m model.QueuedOrder, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.malformed = append(q.malformed, m.MsgID)
	return nil
}

// consOrders is the database. batchErr fails WriteBatch, oneErr[orderID] fails
// WriteOne, recordErr fails RecordDeadLetter. written holds the orders written,
// dead the outcomes 'dead' recorded.
type consOrders struct {
	orderkit.OrderStore
	mu        sync.Mutex
	written   map[int64]model.VoucherOrder
	dead      map[int64]model.Outcome
	batchErr  error
	oneErr    map[int64]error
	recordErr error
	hasOrder  bool       // HasOrder's answer
	fence     *consFence // when set, writes under another value are refused
}

// fenceErr refuses a write under a value the fence no longer holds.
func (o *consOrders) fenceErr(fence string) error {
	if o.fence != nil && fence != o.fence.get() {
		return model.ErrLossFenceMoved
	}
	return nil
}

func (o *consOrders) WriteBatch(_ context.Context, fence string, orders []model.VoucherOrder) ([]int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.fenceErr(fence); err != nil {
		return nil, err
	}
	if o.batchErr != nil {
		return nil, o.batchErr
	}
	for _, v := range orders {
		if _, ok := o.dead[v.ID]; ok {
			return nil, model.ErrOrderDeadLettered
		}
	}
	var existing []int64
	for _, v := range orders {
		if _, ok := o.written[v.ID]; ok {
			existing = append(existing, v.ID)
			continue
		}
		o.written[v.ID] = v
	}
	return existing, nil
}

func (o *consOrders) WriteOne(_ context.Context, fence string, v *model.VoucherOrder) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.fenceErr(fence); err != nil {
		return false, err
	}
	if err := o.oneErr[v.ID]; err != nil {
		return false, err
	}
	if _, ok := o.written[v.ID]; ok {
		return true, nil
	}
	if _, ok := o.dead[v.ID]; ok {
		return false, model.ErrOrderDeadLettered
	}
	o.written[v.ID] = *v
	return false, nil
}

func (o *consOrders) RecordDeadLetter(_ context.Context, m model.QueuedOrder, reason string, attempts int) (model.Outcome, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.recordErr != nil:
		return model.Outcome{}, o.recordErr
	case errors.Is(o.oneErr[m.OrderID], model.ErrOrderIDTaken):
		return model.Outcome{}, o.oneErr[m.OrderID]
	}
	if _, ok := o.written[m.OrderID]; ok {
		return model.Outcome{Written: true}, nil
	}
	if d, ok := o.dead[m.OrderID]; ok {
		return d, nil
	}
	o.dead[m.OrderID] = model.Outcome{Reason: reason, Attempts: attempts}
	return o.dead[m.OrderID], nil
}

func (o *consOrders) Written(_ context.Context, entries []model.QueuedOrder) (map[int64]bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int64]bool{}
	for _, e := range entries {
		if _, ok := o.written[e.OrderID]; ok {
			out[e.OrderID] = true
		}
	}
	return out, nil
}

func (o *consOrders) HasOrder(context.Context, int64, int64) (bool, error) { return o.hasOrder, nil }
func (o *consOrders) OrderFacts(context.Context, []int64, []model.QueuedOrder, bool) (model.OrderFacts, error) {
	return model.OrderFacts{}, nil
}
func (o *consOrders) VoucherSnapshot(context.Context, int64, []model.QueuedOrder) (model.VoucherSnapshot, error) {
	return model.VoucherSnapshot{}, nil
}

// consCounts counts the observer's and the rejection counter's events.
type consCounts struct {
	mu                         sync.Mutex
	written, uniqueKey, lockNo int
	dead                       map[string]int
	rejections                 int
}

func (c *consCounts) LockNotObtained()    { c.mu.Lock(); c.lockNo++; c.mu.Unlock() }
func (c *consCounts) UniqueKeyRejected()  { c.mu.Lock(); c.uniqueKey++; c.mu.Unlock() }
func (c *consCounts) StaleFenceRejected() {}
func (c *consCounts) BatchRead(int)       {}
func (c *consCounts) OrdersWritten(n int) { c.mu.Lock(); c.written += n; c.mu.Unlock() }
func (c *consCounts) DeadLettered(r string) {
	c.mu.Lock()
	c.dead[r]++
	c.mu.Unlock()
}
func (c *consCounts) Claimed(int) {}
func (c *consCounts) IncrDuplicateRejections(context.Context, int64) error {
	c.mu.Lock()
	c.rejections++
	c.mu.Unlock()
	return nil
}
func (c *consCounts) DuplicateRejections(context.Context, int64) (int64, error) { return 0, nil }

type consRig struct {
	q      *consQueue
	orders *consOrders
	counts *consCounts
	locker *lock.Local // set by newConsRig only
	c      *consumer
}

func newConsRig(t *testing.T) *consRig {
	t.Helper()
	locker, err := lock.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	r := newConsRigWith(locker)
	r.locker = locker
	return r
}

// newConsRigWith is a consumer over fakes that locks with locker.
func newConsRigWith(locker lock.Locker) *consRig {
	r := &consRig{
		q:      &consQueue{dead: map[string]consDead{}},
		orders: &consOrders{written: map[int64]model.VoucherOrder{}, dead: map[int64]model.Outcome{}, oneErr: map[int64]error{}},
		counts: &consCounts{dead: map[string]int{}},
	}
	g := NewConsumerGroup(ConsumerDeps{
		Orders: r.orders, Queue: r.q, Locker: locker, Rejects: r.counts,
		Observer: r.counts, Metrics: r.counts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, ConsumerConfig{})
	r.c = g.newConsumer("test", make(chan struct{}))
	return r
}

// entries returns n well-formed entries of voucher 7, users 1..n, order ids
// 100+i, message ids "m<i>".
func entries(n int) []model.QueuedOrder {
	out := make([]model.QueuedOrder, n)
	for i := range out {
		out[i] = model.QueuedOrder{MsgID: "m" + strconv.Itoa(i+1), OrderID: int64(101 + i), UserID: int64(1 + i), VoucherID: 7}
	}
	return out
}

func TestConsumerProcess(t *testing.T) {
	unavailable := model.Unavailable(errors.New("db down"))
	tests := []struct {
		name      string
		msgs      []model.QueuedOrder
		setup     func(r *consRig)
		wantLeft  int
		wantAcked []string
		wantDead  map[string]consDead
		check     func(t *testing.T, r *consRig)
	}{
		{
			name: "written and acknowledged", msgs: entries(3),
			wantAcked: []string{"m1", "m2", "m3"},
			check: func(t *testing.T, r *consRig) {
				if len(r.orders.written) != 3 || r.counts.written != 3 {
					t.Errorf("got %d rows, %d counted written, want 3, 3", len(r.orders.written), r.counts.written)
				}
				if o := r.orders.written[101]; o.UserID != 1 || o.VoucherID != 7 || o.Status != model.OrderStatusCreated {
					t.Errorf("order 101: got %+v, want user 1, voucher 7, created", o)
				}
			},
		},
		{
			name: "redelivered orders are acknowledged, not written again", msgs: entries(2),
			setup: func(r *consRig) {
				r.orders.written[101] = model.VoucherOrder{ID: 101, UserID: 1, VoucherID: 7}
			},
			wantAcked: []string{"m1", "m2"},
			check: func(t *testing.T, r *consRig) {
				if r.counts.written != 1 {
					t.Errorf("counted %d written, want 1 (one was there)", r.counts.written)
				}
			},
		},
		{
			name: "database down: everything stays pending", msgs: entries(3),
			setup:    func(r *consRig) { r.orders.batchErr = unavailable },
			wantLeft: 3,
		},
		{
			name: "sold out in the database: the culprit is dead-lettered, buyer removed", msgs: entries(2),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrSoldOut
				r.orders.oneErr[102] = model.ErrSoldOut
			},
			wantAcked: []string{"m1"},
			wantDead:  map[string]consDead{"m2": {ReasonSoldOut, 1, true, false}},
		},
		{
			name: "duplicate user: dead-lettered, buyer kept, unique key counted", msgs: entries(1),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrDuplicateOrder
				r.orders.oneErr[101] = errors.Join(model.ErrDuplicateOrder, model.ErrUniqueKey)
				r.orders.hasOrder = true
			},
			wantDead: map[string]consDead{"m1": {ReasonDuplicate, 1, false, true}},
			check: func(t *testing.T, r *consRig) {
				if r.counts.uniqueKey != 1 || r.counts.rejections != 1 {
					t.Errorf("got %d unique-key events, %d rejections counted, want 1, 1", r.counts.uniqueKey, r.counts.rejections)
				}
			},
		},
		{
			name: "id of another order", msgs: entries(1),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrOrderIDTaken
				r.orders.oneErr[101] = model.ErrOrderIDTaken
			},
			wantDead: map[string]consDead{"m1": {ReasonIDTaken, 1, true, true}},
		},
		{
			name: "consumers kept dying with it", msgs: []model.QueuedOrder{{MsgID: "m1", OrderID: 101, UserID: 1, VoucherID: 7, Deliveries: 6}},
			wantDead: map[string]consDead{"m1": {ReasonDeliveries, 6, true, true}},
			check: func(t *testing.T, r *consRig) {
				if len(r.orders.written) != 0 {
					t.Errorf("wrote %d orders, want none", len(r.orders.written))
				}
			},
		},
		{
			name:      "malformed and deleted entries",
			msgs:      []model.QueuedOrder{{MsgID: "bad", Malformed: "malformed orderId"}, {MsgID: "gone", Deleted: true}},
			wantAcked: []string{"gone"},
			check: func(t *testing.T, r *consRig) {
				if !slices.Equal(r.q.malformed, []string{"bad"}) || r.counts.dead[ReasonMalformed] != 1 {
					t.Errorf("malformed: got %v, want [bad] dead-lettered", r.q.malformed)
				}
			},
		},
		{
			name: "user lock held elsewhere: that entry waits", msgs: entries(2),
			setup: func(r *consRig) {
				if _, err := r.locker.Obtain(context.Background(), lock.OrderKey(2)); err != nil {
					panic(err)
				}
			},
			wantLeft: 1, wantAcked: []string{"m1"},
			check: func(t *testing.T, r *consRig) {
				if r.counts.lockNo != 1 {
					t.Errorf("got %d refused locks counted, want 1", r.counts.lockNo)
				}
			},
		},
		{
			name: "voucher not ok in redis: the dead letter waits", msgs: entries(1),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrSoldOut
				r.orders.oneErr[101] = model.ErrSoldOut
				r.q.deadErr = model.Unavailable(model.ErrVoucherUnsafe)
			},
			wantLeft: 1,
		},
		{
			name: "given up by another consumer: not written, its dead letter finished with the reason recorded", msgs: entries(2),
			setup: func(r *consRig) {
				r.orders.dead[101] = model.Outcome{Reason: ReasonSoldOut, Attempts: 3}
			},
			wantAcked: []string{"m2"},
			wantDead:  map[string]consDead{"m1": {ReasonSoldOut, 3, true, false}},
			check: func(t *testing.T, r *consRig) {
				if _, ok := r.orders.written[101]; ok || len(r.orders.written) != 1 {
					t.Errorf("written: got %v, want only order 102", r.orders.written)
				}
			},
		},
		{
			name: "database down while giving up: the dead letter waits", msgs: entries(1),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrSoldOut
				r.orders.oneErr[101] = model.ErrSoldOut
				r.orders.recordErr = unavailable
			},
			wantLeft: 1,
		},
		{
			name: "written meanwhile: acknowledged, not dead-lettered", msgs: entries(1),
			setup: func(r *consRig) {
				r.orders.batchErr = model.ErrSoldOut
				r.orders.oneErr[101] = model.ErrSoldOut
				r.orders.written[101] = model.VoucherOrder{ID: 101, UserID: 1, VoucherID: 7}
			},
			wantAcked: []string{"m1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newConsRig(t)
			if tt.setup != nil {
				tt.setup(r)
			}
			left := len(r.c.process(tt.msgs))
			if left != tt.wantLeft {
				t.Errorf("left pending: got %d, want %d", left, tt.wantLeft)
			}
			slices.Sort(r.q.acked)
			if !slices.Equal(r.q.acked, tt.wantAcked) {
				t.Errorf("acknowledged: got %v, want %v", r.q.acked, tt.wantAcked)
			}
			if len(r.q.dead) != len(tt.wantDead) {
				t.Errorf("dead letters: got %v, want %v", r.q.dead, tt.wantDead)
			}
			for id, want := range tt.wantDead {
				if got := r.q.dead[id]; got != want {
					t.Errorf("dead letter %s: got %+v, want %+v", id, got, want)
				}
				if r.counts.dead[want.reason] == 0 {
					t.Errorf("dead letter %s: reason %s not counted", id, want.reason)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			if n := len(r.c.failures); tt.wantLeft == 0 && n != 0 {
				t.Errorf("failure counts left behind: %v", r.c.failures)
			}
		})
	}
}

// TestConsumerUnknownErrorBounded: a write failing for an unknown cause is
// retried, then dead-lettered after MaxAttempts attempts.
func TestConsumerUnknownErrorBounded(t *testing.T) {
	r := newConsRig(t)
	r.orders.batchErr = errors.New("strange")
	r.orders.oneErr[101] = errors.New("strange")
	msgs := entries(1)
	for i := 1; i < r.c.cfg.MaxAttempts; i++ {
		if left := len(r.c.process(msgs)); left != 1 || len(r.q.dead) != 0 {
			t.Fatalf("attempt %d: got %d left, dead %v, want 1 left, none dead", i, left, r.q.dead)
		}
	}
	if left := len(r.c.process(msgs)); left != 0 {
		t.Errorf("attempt %d: got %d left, want 0", r.c.cfg.MaxAttempts, left)
	}
	want := consDead{ReasonFailures, r.c.cfg.MaxAttempts, true, true}
	if got := r.q.dead["m1"]; got != want {
		t.Errorf("dead letter: got %+v, want %+v", got, want)
	}
}

// TestConsumersStop: Stop returns once the consumers have left their loop
// (the blocking read returns empty here), and a second Stop is harmless.
func TestConsumersStop(t *testing.T) {
	r := newConsRig(t)
	r.c.cfg.Consumers = 3
	p, err := r.c.StartConsumers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

// TestConsumerTouchDropsLostEntries: of the entries kept for a retry, the
// consumer keeps those it still owns and forgets the others (and their
// failure counts).
func TestConsumerTouchDropsLostEntries(t *testing.T) {
	r := newConsRig(t)
	r.q.lost = map[string]bool{"m2": true}
	r.c.failures["m2"] = 2
	kept, err := r.c.touch(context.Background(), entries(3))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range kept {
		ids = append(ids, m.MsgID)
	}
	if !slices.Equal(ids, []string{"m1", "m3"}) {
		t.Errorf("kept %v, want [m1 m3]", ids)
	}
	if _, ok := r.c.failures["m2"]; ok {
		t.Errorf("failure count of the lost entry kept: %v", r.c.failures)
	}
}

// TestStartConsumersRejectsShortClaimIdle: an entry must not become
// claimable while its batch may still run.
func TestStartConsumersRejectsShortClaimIdle(t *testing.T) {
	r := newConsRig(t)
	r.c.cfg.ClaimIdle = r.c.cfg.BatchTimeout - time.Millisecond
	if p, err := r.c.StartConsumers(context.Background()); err == nil {
		p.Stop(context.Background())
		t.Fatalf("claim idle %v < batch timeout %v: got no error", r.c.cfg.ClaimIdle, r.c.cfg.BatchTimeout)
	}
	r.c.cfg.ClaimIdle = r.c.cfg.BatchTimeout
	p, err := r.c.StartConsumers(context.Background())
	if err != nil {
		t.Fatalf("claim idle = batch timeout: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClaimTouchesKeptEntriesBetweenPages: kept entries are touched before
// every later page. Each claimed page may take up to the batch timeout.
// Unattended through slow pages, kept entries would be claimed by a peer. Each
// such claim would count a delivery.
func TestClaimTouchesKeptEntriesBetweenPages(t *testing.T) {
	r := newConsRig(t)
	r.c.cfg.Batch = 2
	r.orders.batchErr = model.Unavailable(errors.New("database down"))
	all := entries(5)
	kept := all[:1]
	r.q.claimPages = [][]model.QueuedOrder{all[1:3], all[3:5]}
	left := r.c.claim(context.Background(), kept)
	if len(left) != 5 {
		t.Errorf("left pending: got %d entries, want 5 (the kept one and both pages)", len(left))
	}
	// Before the second page: the kept one and the first page's; before
	// the third (which finds nothing): all five.
	if len(r.q.touches) != 2 || !slices.Equal(r.q.touches[0], []string{"m1", "m2", "m3"}) ||
		!slices.Equal(r.q.touches[1], []string{"m1", "m2", "m3", "m4", "m5"}) {
		t.Errorf("touches: got %v, want [m1 m2 m3] before the second page and [m1 … m5] before the third", r.q.touches)
	}
}
