package async

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/internal/orderkit"
)

// EpochName is the name of the async epoch among the named values.
const EpochName = "async_epoch"

// ReconcilerDeps are the collaborators of the reconciler.
type ReconcilerDeps struct {
	Vouchers AsyncVoucherStore
	Orders   FactsReader
	Redis    AsyncState
	Queue    OrderQueue
	Values   NamedValues
	// Fence is the loss fence every rebuild moves before it reads the facts.
	Fence LossFence
	// Sequence repairs the id sequence when Redis lost its data (optional).
	Sequence IDSequence
	// Lock serializes reconciliation and rebuilds across processes.
	// It must wait (lock.WithWait) and outlive a reconciliation.
	Lock lock.Locker
	Now  func() time.Time
	Log  *slog.Logger
	// TrustFacts rebuilds every live voucher from the facts at start.
	// It skips the epoch check, for an embedded Redis that starts empty.
	// Default false.
	TrustFacts bool
}

// Reconciler keeps each live voucher's Redis state true to the facts.
// It runs at start (Reconcile) and on the operator's demand (Rebuild).
type Reconciler struct {
	d ReconcilerDeps
}

// NewReconciler returns the reconciler of async mode.
func NewReconciler(d ReconcilerDeps) *Reconciler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Reconciler{d: d}
}

// Reconcile checks, before serving, that Redis holds what the service put
// there. It rebuilds a live voucher's Redis state only from the facts. The
// epoch rule it follows is in docs/async.md ("the epoch rule").
func (s *Reconciler) Reconcile(ctx context.Context) error {
	return s.withReconcileLock(ctx, s.reconcile)
}

// Rebuild is the operator's `seckill rebuild --voucher N`. It reconciles like a
// starting process, then rebuilds the voucher and sets it ok. Admissions that
// Redis lost are not honoured: they will never be written.
func (s *Reconciler) Rebuild(ctx context.Context, voucherID int64) (model.RedisVoucher, error) {
	var rv model.RedisVoucher
	err := s.withReconcileLock(ctx, func(ctx context.Context) error {
		sv, err := s.d.Vouchers.GetSeckill(ctx, voucherID)
		if err != nil {
			return err
		}
		if err := s.reconcile(ctx); err != nil {
			return err
		}
		if err := s.rebuild(ctx, sv, "operator rebuild"); err != nil {
			return err
		}
		rv, err = s.d.Redis.Voucher(ctx, voucherID)
		return err
	})
	return rv, err
}

func (s *Reconciler) withReconcileLock(ctx context.Context, f func(context.Context) error) error {
	lk, err := s.d.Lock.Obtain(ctx, lock.ReconcileKey)
	if err != nil {
		return fmt.Errorf("reconcile: obtain %s: %w", lock.ReconcileKey, model.Unavailable(err))
	}
	defer func() {
		if err := orderkit.ReleaseLock(ctx, lk); err != nil && !errors.Is(err, lock.ErrNotHeld) {
			s.d.Log.WarnContext(ctx, "reconcile lock release failed", "err", err)
		}
	}()
	return f(ctx)
}

func (s *Reconciler) reconcile(ctx context.Context) error {
	dbEpoch, err := s.d.Values.Get(ctx, EpochName)
	if err != nil {
		return fmt.Errorf("reconcile: read epoch: %w", err)
	}
	first := false
	if dbEpoch == "" {
		candidate := rand.Text()
		if err := s.d.Values.InsertIfAbsent(ctx, EpochName, candidate); err != nil {
			return fmt.Errorf("reconcile: write epoch: %w", err)
		}
		if dbEpoch, err = s.d.Values.Get(ctx, EpochName); err != nil {
			return fmt.Errorf("reconcile: read epoch: %w", err)
		}
		first = dbEpoch == candidate
	}
	redisEpoch, err := s.d.Redis.Epoch(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: read redis epoch: %w", err)
	}
	// The unsharded key layout: no epoch in the shards, ours under the
	// unsharded key. Start-up refuses to run while the unsharded stream holds
	// orders. So every order admitted there is in the database: the facts are
	// whole.
	upgrade := false
	if redisEpoch == "" && !first && !s.d.TrustFacts {
		legacy, err := s.d.Redis.LegacyEpoch(ctx)
		if err != nil {
			return fmt.Errorf("reconcile: read the old layout's epoch: %w", err)
		}
		upgrade = legacy == dbEpoch
	}
	live, err := s.d.Vouchers.ListLive(ctx, s.d.Now())
	if err != nil {
		return fmt.Errorf("reconcile: list live vouchers: %w", err)
	}
	log := s.d.Log.With("epoch", dbEpoch)
	switch {
	case first || s.d.TrustFacts || upgrade:
		why := "first async start"
		switch {
		case upgrade:
			why = "upgrade from the one-stream key layout"
		case !first:
			why = "embedded redis starts empty"
		}
		log.InfoContext(ctx, "rebuilding every live voucher from facts", "reason", why, "vouchers", len(live))
		if !first {
			if err := s.resyncIDs(ctx); err != nil {
				return err
			}
		}
		if err := s.d.Redis.SetEpoch(ctx, dbEpoch); err != nil {
			return err
		}
		reasons := make([]string, len(live))
		for i := range reasons {
			reasons[i] = why
		}
		if err := s.rebuildAll(ctx, live, reasons); err != nil {
			return err
		}
	case redisEpoch == dbEpoch:
		outcomes, err := s.checkSettled(ctx, live)
		if err != nil {
			return err
		}
		counts := map[string]int{}
		var stale []model.SeckillVoucher
		var reasons []string
		for i, outcome := range outcomes {
			if outcome == "ok" || outcome == model.VoucherStateUnsafe {
				counts[outcome]++
				continue
			}
			counts["rebuilt"]++
			stale, reasons = append(stale, live[i]), append(reasons, outcome)
		}
		if err := s.rebuildAll(ctx, stale, reasons); err != nil {
			return err
		}
		log.InfoContext(ctx, "redis state checked", "vouchers", len(live), "outcomes", counts)
	default:
		if err := s.resyncIDs(ctx); err != nil {
			return err
		}
		log.ErrorContext(ctx, "redis epoch differs from the database's: redis lost its data or is another redis; live vouchers are refused until rebuilt",
			"redis_epoch", redisEpoch, "vouchers", len(live))
		for _, sv := range live {
			if err := s.d.Redis.SetState(ctx, sv.VoucherID, model.VoucherStateUnsafe); err != nil {
				return err
			}
			log.ErrorContext(ctx, "voucher marked unsafe: admissions lost with redis cannot be known; run `seckill rebuild --voucher N`",
				"voucher_id", sv.VoucherID)
		}
		if err := s.d.Redis.SetEpoch(ctx, dbEpoch); err != nil {
			return err
		}
	}
	return nil
}

// resyncIDs moves the id sequence past the database's ids.
// Redis lost its counter with the rest.
func (s *Reconciler) resyncIDs(ctx context.Context) error {
	if s.d.Sequence == nil {
		return nil
	}
	if err := s.d.Sequence.Resync(ctx); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

// settleChecks, settleMaxChecks and settleGap bound checkSettled.
// A mismatch is confirmed by the same residual settleChecks times in a row.
// The checks are settleGap apart, at most settleMaxChecks of them.
const (
	settleChecks    = 3
	settleMaxChecks = 10
	settleGap       = 250 * time.Millisecond
)

// residual is how far a voucher's Redis state is from the facts.
// It holds stock + orders + pending − initial, and buyers − orders − pending.
// Both are zero when invariant 5 holds.
// Admissions, drained orders and dead letters keep them constant.
// Only a really stale state moves them: sales Redis never saw, lost admissions.
type residual struct{ stock, buyers int64 }

func (r residual) zero() bool { return r == residual{} }

// checkSettled runs checkAll and re-checks the mismatches.
// A voucher is ok as soon as a check finds its residual zero.
// It is rebuilt when the same residual comes back settleChecks times,
// or when the residual never settles within settleMaxChecks.
// docs/async.md ("the epoch rule") says why a residual can show for an instant.
func (s *Reconciler) checkSettled(ctx context.Context, live []model.SeckillVoucher) ([]string, error) {
	outcomes, res, counts, err := s.checkAll(ctx, live)
	if err != nil {
		return nil, err
	}
	streak := make([]int, len(live))
	for round := 1; round < settleMaxChecks; round++ {
		var idx []int
		var again []model.SeckillVoucher
		for i, o := range outcomes {
			if o == "mismatch" && streak[i]+1 < settleChecks {
				idx, again = append(idx, i), append(again, live[i])
			}
		}
		if len(again) == 0 {
			break
		}
		t := time.NewTimer(settleGap)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		o2, r2, c2, err := s.checkAll(ctx, again)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			switch {
			case o2[j] != "mismatch":
				if o2[j] == "ok" {
					s.d.Log.InfoContext(ctx, "voucher on sale: a passing mismatch of in-flight orders, redis state trusted",
						"voucher_id", live[i].VoucherID, "counts_before", counts[i], "counts_after", c2[j])
				}
				outcomes[i] = o2[j]
			case r2[j] == res[i]:
				streak[i]++
			default:
				res[i], streak[i] = r2[j], 0
			}
			counts[i] = c2[j]
		}
	}
	for i, o := range outcomes {
		if o != "mismatch" {
			continue
		}
		if streak[i]+1 < settleChecks {
			outcomes[i] = "mismatch (residual not settled)"
		}
		s.d.Log.WarnContext(ctx, "voucher redis state does not match the facts (stock/buyers/db orders/pending/cancelled/returned)",
			"voucher_id", live[i].VoucherID, "initial", live[i].InitialStock, "counts", counts[i],
			"stock_residual", res[i].stock, "buyers_residual", res[i].buyers, "outcome", outcomes[i])
	}
	return outcomes, nil
}

// checkAll checks the live vouchers of an intact Redis against invariant 5. It
// compares counts; buyer lists are read only to rebuild. It reads Redis and the
// stream in one MULTI, then the database in one transaction. For each voucher
// it returns "ok", "unsafe" or why it needs a rebuild, with its residual and
// the counts it compared.
func (s *Reconciler) checkAll(ctx context.Context, live []model.SeckillVoucher) (outcomes []string, res []residual, counts []string, err error) {
	ids := make([]int64, len(live))
	isLive := make(map[int64]bool, len(live))
	for i, sv := range live {
		ids[i] = sv.VoucherID
		isLive[sv.VoucherID] = true
	}
	states, entries, err := s.d.Queue.Snapshot(ctx, ids)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reconcile: read redis state: %w", err)
	}
	parsed := queued(entries, func(v int64) bool { return isLive[v] })
	f, err := s.d.Orders.OrderFacts(ctx, ids, parsed, false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reconcile: %w", err)
	}
	pendingBy := map[int64]int64{}
	for _, e := range pending(parsed, f.Written) {
		pendingBy[e.VoucherID]++
	}
	outcomes = make([]string, len(live))
	res = make([]residual, len(live))
	counts = make([]string, len(live))
	for i, sv := range live {
		rv, o, p := states[sv.VoucherID], f.Orders[sv.VoucherID], pendingBy[sv.VoucherID]
		c := f.Cancelled[sv.VoucherID]
		counts[i] = fmt.Sprintf("%d/%d/%d/%d/%d/%d", rv.Stock, rv.Buyers, o, p, c, rv.Returned)
		// A cancelled order Redis has not taken back yet still holds its unit.
		// Its give-back is due.
		res[i] = residual{stock: rv.Stock + o + p + (c - rv.Returned) - int64(sv.InitialStock), buyers: rv.Buyers - o - c - p}
		switch {
		case !rv.Exists:
			outcomes[i] = "not loaded"
		case rv.State == model.VoucherStateUnsafe:
			s.d.Log.ErrorContext(ctx, "voucher stays unsafe until rebuilt: run `seckill rebuild --voucher N`", "voucher_id", sv.VoucherID)
			outcomes[i] = model.VoucherStateUnsafe
		case rv.State != model.VoucherStateOK:
			// Frozen by a reconciler that died: the state is intact but
			// unchecked, and frozen, so the facts are stable.
			outcomes[i] = "left " + rv.State
		case !rv.StockExists:
			outcomes[i] = "stock missing"
		case res[i].zero():
			outcomes[i] = "ok"
		default:
			outcomes[i] = "mismatch"
		}
	}
	return outcomes, res, counts, nil
}

// groupByVoucher splits the stream entries that name an order by voucher.
func groupByVoucher(entries []model.QueuedOrder) map[int64][]model.QueuedOrder {
	out := make(map[int64][]model.QueuedOrder)
	for _, e := range queued(entries, nil) {
		out[e.VoucherID] = append(out[e.VoucherID], e)
	}
	return out
}

// facts are what the database and the stream say about one voucher.
// orders counts the live orders, unpaid and paid.
// returned lists the cancelled ones, whose units stock counts as on sale.
type facts struct {
	orders, pending int
	stock           int64
	buyers          []int64
	returned        []int64
}

// factsOf derives a voucher's facts from the snapshot f and its stream entries.
// An entry is pending unless f has its order written.
// So an order committed while the facts are read is counted once.
func (s *Reconciler) factsOf(ctx context.Context, sv *model.SeckillVoucher, f model.OrderFacts, entries []model.QueuedOrder) facts {
	dbBuyers := f.Buyers[sv.VoucherID]
	buyers := slices.Clone(dbBuyers)
	waiting := pending(entries, f.Written)
	for _, e := range waiting {
		buyers = append(buyers, e.UserID)
	}
	slices.Sort(buyers)
	buyers = slices.Compact(buyers)
	live := int(f.Orders[sv.VoucherID])
	out := facts{
		orders: live, pending: len(waiting), buyers: buyers, returned: f.CancelledIDs[sv.VoucherID],
		stock: int64(sv.InitialStock - live - len(waiting)),
	}
	if out.stock < 0 {
		s.d.Log.ErrorContext(ctx, "orders and pending exceed the initial stock",
			"voucher_id", sv.VoucherID, "initial", sv.InitialStock, "db_orders", out.orders, "pending", out.pending)
		out.stock = 0
	}
	return out
}

// rebuild freezes the voucher, reads the facts and replaces its Redis state
// (state ok).
func (s *Reconciler) rebuild(ctx context.Context, sv *model.SeckillVoucher, why string) error {
	return s.rebuildAll(ctx, []model.SeckillVoucher{*sv}, []string{why})
}

// rebuildAll freezes the vouchers, reads the facts and replaces their Redis
// state. Frozen vouchers take no admissions and no give-backs, so their facts
// stop moving. Only orders still go from the stream to the database. It moves
// the loss fence, reads the stream once, then the database, and sets each
// voucher ok. Once the fence moved, no write of entries read before can
// commit. Entries that Redis lost are either in the database or never will
// be (docs/async.md, "the loss fence").
func (s *Reconciler) rebuildAll(ctx context.Context, vouchers []model.SeckillVoucher, reasons []string) error {
	if len(vouchers) == 0 {
		return nil
	}
	for _, sv := range vouchers {
		if err := s.d.Redis.SetState(ctx, sv.VoucherID, model.VoucherStateFrozen); err != nil {
			return err
		}
	}
	if err := s.d.Fence.Move(ctx); err != nil {
		return fmt.Errorf("reconcile: move the loss fence: %w", err)
	}
	entries, err := s.d.Queue.Entries(ctx)
	if err != nil {
		return err
	}
	byVoucher := groupByVoucher(entries)
	ids := make([]int64, len(vouchers))
	var mine []model.QueuedOrder
	for i, sv := range vouchers {
		ids[i] = sv.VoucherID
		mine = append(mine, byVoucher[sv.VoucherID]...)
	}
	db, err := s.d.Orders.OrderFacts(ctx, ids, mine, true)
	if err != nil {
		return err
	}
	for i := range vouchers {
		sv := &vouchers[i]
		f := s.factsOf(ctx, sv, db, byVoucher[sv.VoucherID])
		if err := s.d.Redis.Load(ctx, sv, f.stock, f.buyers, f.returned); err != nil {
			return err
		}
		s.d.Log.InfoContext(ctx, "voucher rebuilt from facts", "voucher_id", sv.VoucherID, "reason", reasons[i],
			"initial", sv.InitialStock, "db_orders", f.orders, "cancelled", len(f.returned), "pending", f.pending, "stock", f.stock, "buyers", len(f.buyers))
	}
	return nil
}
