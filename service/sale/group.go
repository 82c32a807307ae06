package sale

import (
	"context"
	"sync"
	"time"

	"seckill/model"
)

// GroupOrderStore commits concurrent sync orders of one voucher together.
type GroupOrderStore interface {
	// CreateOrders writes orders of one voucher in one transaction, in arrival
	// order. It answers each: nil when written, else a refusal. Refusals are
	// model.ErrStaleFence, ErrDuplicateOrder, ErrSoldOut or a closed window.
	// When units run short, the last orders are sold out. model.ErrNotGrouped
	// marks an order its buyer must write alone. fences[i] belongs to orders[i]
	// and may be nil.
	CreateOrders(ctx context.Context, orders []model.VoucherOrder, fences []*model.Fence) []error
}

// GroupObserver receives the size of every sync commit group, a lone
// order being a group of one. The orderkit.Observer may implement it.
type GroupObserver interface {
	SyncGroupCommitted(size int)
}

// DefaultGroupMax bounds the orders of one commit group.
const DefaultGroupMax = 64

// groupCommitTimeout bounds a group's transaction when no buyer of the
// group has a deadline.
const groupCommitTimeout = 10 * time.Second

// groupCommitter commits the orders of one voucher's concurrent buyers
// together. The first buyer of a voucher commits at once, alone. Buyers
// arriving during a commit wait, and form the next group when it ends. So a
// group adds no delay without contention.
type groupCommitter struct {
	groups GroupOrderStore
	single func(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error
	obs    GroupObserver
	max    int

	mu     sync.Mutex
	queues map[int64]*groupQueue // by voucher, while a commit runs
}

// groupQueue holds the buyers of one voucher waiting for the commit in
// flight to end.
type groupQueue struct{ waiting []*groupEntry }

// groupEntry is one buyer's order on its way through the committer.
type groupEntry struct {
	ctx   context.Context
	order *model.VoucherOrder
	fence *model.Fence
	taken bool          // in a group, under mu: the buyer waits for its answer
	wake  chan struct{} // closed when lead or err is set
	lead  []*groupEntry // the group this buyer commits, itself first
	err   error
}

// newGroupCommitter commits groups with groups and lone orders with
// single, at most limit orders per group (DefaultGroupMax when 0).
func newGroupCommitter(groups GroupOrderStore, single func(context.Context, *model.VoucherOrder, *model.Fence) error,
	obs GroupObserver, limit int) *groupCommitter {
	if limit <= 0 {
		limit = DefaultGroupMax
	}
	return &groupCommitter{groups: groups, single: single, obs: obs, max: limit, queues: map[int64]*groupQueue{}}
}

// commit writes o and answers like orderkit.OrderStore.CreateOrder, or
// model.ErrNotGrouped when the buyer must write it alone. A buyer whose
// context ends while it waits leaves unwritten; once its group commits,
// it waits for the outcome.
func (g *groupCommitter) commit(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
	e := &groupEntry{ctx: ctx, order: o, fence: fence, wake: make(chan struct{})}
	v := o.VoucherID
	g.mu.Lock()
	q, busy := g.queues[v]
	if !busy {
		g.queues[v] = &groupQueue{}
		g.mu.Unlock()
		g.run(v, []*groupEntry{e})
		return e.err
	}
	q.waiting = append(q.waiting, e)
	g.mu.Unlock()

	select {
	case <-e.wake:
	case <-ctx.Done():
		g.mu.Lock()
		if !e.taken {
			q.waiting = without(q.waiting, e)
			g.mu.Unlock()
			return model.Unavailable(ctx.Err())
		}
		g.mu.Unlock()
		<-e.wake
	}
	if e.lead != nil {
		g.run(v, e.lead)
	}
	return e.err
}

// without returns entries without e.
func without(entries []*groupEntry, e *groupEntry) []*groupEntry {
	for i, x := range entries {
		if x == e {
			return append(entries[:i], entries[i+1:]...)
		}
	}
	return entries
}

// run commits group (its leader first), hands the voucher's waiting
// buyers to the next leader and then answers the group.
func (g *groupCommitter) run(v int64, group []*groupEntry) {
	live := group[:0:0]
	for _, e := range group {
		if err := e.ctx.Err(); err != nil {
			// Gone before its group started: never written.
			e.err = model.Unavailable(err)
			continue
		}
		live = append(live, e)
	}
	switch len(live) {
	case 0:
	case 1:
		e := live[0]
		e.err = g.single(e.ctx, e.order, e.fence)
	default:
		g.commitGroup(live)
	}
	if len(live) > 0 && g.obs != nil {
		g.obs.SyncGroupCommitted(len(live))
	}
	g.next(v)
	for _, e := range group[1:] {
		close(e.wake)
	}
}

// commitGroup runs the group transaction on a context no single buyer
// can cancel, bounded by the latest of their deadlines.
func (g *groupCommitter) commitGroup(group []*groupEntry) {
	deadline, ok := time.Time{}, true
	for _, e := range group {
		d, has := e.ctx.Deadline()
		ok = ok && has
		if d.After(deadline) {
			deadline = d
		}
	}
	if !ok {
		deadline = time.Now().Add(groupCommitTimeout)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(group[0].ctx), deadline)
	defer cancel()
	orders := make([]model.VoucherOrder, len(group))
	fences := make([]*model.Fence, len(group))
	for i, e := range group {
		orders[i], fences[i] = *e.order, e.fence
	}
	errs := g.groups.CreateOrders(ctx, orders, fences)
	for i, e := range group {
		e.err = errs[i]
	}
}

// next makes the first of the voucher's waiting buyers lead the next
// group, or ends the voucher's busy state when none waits.
func (g *groupCommitter) next(v int64) {
	g.mu.Lock()
	q := g.queues[v]
	if len(q.waiting) == 0 {
		delete(g.queues, v)
		g.mu.Unlock()
		return
	}
	n := min(len(q.waiting), g.max)
	group := append([]*groupEntry(nil), q.waiting[:n]...)
	q.waiting = append(q.waiting[:0:0], q.waiting[n:]...)
	for _, e := range group {
		e.taken = true
	}
	g.mu.Unlock()
	group[0].lead = group
	close(group[0].wake)
}
