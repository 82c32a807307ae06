package async

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/internal/orderkit"
)

// batch is the state of one process call.
type batch struct {
	c    *consumer
	ctx  context.Context
	ack  []model.QueuedOrder
	left []model.QueuedOrder
}

// keep leaves entries pending, to be retried.
func (b *batch) keep(msgs ...model.QueuedOrder) { b.left = append(b.left, msgs...) }

// lockUsers takes lock:order:<userId> for the users of work in one
// lock.ObtainAll. A lock.BatchLocker such as lua needs one round trip; others
// lock in parallel. It returns the entries whose user is locked; the others
// stay pending. The returned function releases the locks in one call, after the
// acknowledgement. Without a Locker every entry goes through unlocked.
func (b *batch) lockUsers(work []model.QueuedOrder) ([]model.QueuedOrder, func()) {
	c := b.c
	if c.d.Locker == nil {
		return work, func() {}
	}
	if len(work) == 0 {
		return nil, func() {}
	}
	// The watchdog of renewing backends stops when lockCtx ends.
	lockCtx, cancelLocks := context.WithCancel(b.ctx)
	var users []int64
	var keys []string
	seen := map[int64]bool{}
	for _, m := range work {
		if !seen[m.UserID] {
			seen[m.UserID] = true
			users = append(users, m.UserID)
			keys = append(keys, lock.OrderKey(m.UserID))
		}
	}
	obtained, errs := lock.ObtainAll(lockCtx, c.d.Locker, keys)
	locks := make(map[int64]bool, len(users))
	var held []lock.Lock
	for i, u := range users {
		switch err := errs[i]; {
		case obtained[i] != nil:
			locks[u] = true
			held = append(held, obtained[i])
		case errors.Is(err, lock.ErrNotObtained):
			c.d.Observer.LockNotObtained()
		default:
			c.d.Log.WarnContext(b.ctx, "consumer lock", "user_id", u, "err", err)
		}
	}
	var locked []model.QueuedOrder
	for _, m := range work {
		if locks[m.UserID] {
			locked = append(locked, m)
		} else {
			b.keep(m)
		}
	}
	return locked, func() {
		defer cancelLocks()
		if len(held) == 0 {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), orderkit.ReleaseTimeout)
		defer cancel()
		for i, err := range lock.ReleaseAll(rctx, c.d.Locker, held) {
			if err != nil {
				c.d.Log.WarnContext(b.ctx, "consumer lock release failed", "key", held[i].Key(), "err", err)
			}
		}
	}
}

// order is the order of entry m.
func (b *batch) order(m model.QueuedOrder) model.VoucherOrder {
	o := orderkit.NewOrder(m.OrderID, m.UserID, m.VoucherID, b.c.d.Now())
	o.CreateTime = admittedAt(m, o.UpdateTime)
	return o
}

// admittedAt is when the order's pay time starts: its admission, not its write.
// It is now when the admission time is unknown or later than now.
func admittedAt(m model.QueuedOrder, now time.Time) time.Time {
	if m.Admitted.IsZero() || m.Admitted.After(now) {
		return now
	}
	return m.Admitted
}

// write writes the locked entries in one transaction. When the batch fails for
// a business reason, it writes each entry alone to find the culprit.
func (b *batch) write(msgs []model.QueuedOrder) {
	if len(msgs) == 0 {
		return
	}
	c := b.c
	orders := make([]model.VoucherOrder, len(msgs))
	for i, m := range msgs {
		orders[i] = b.order(m)
	}
	existing, err := c.d.Orders.WriteBatch(b.ctx, c.fence, orders)
	switch {
	case err == nil:
		b.ack = append(b.ack, msgs...)
		c.d.Metrics.OrdersWritten(len(msgs) - len(existing))
		for _, m := range msgs {
			delete(c.failures, m.MsgID)
		}
		return
	case errors.Is(err, model.ErrLossFenceMoved):
		b.fenceMoved(msgs...)
		return
	case errors.Is(err, model.ErrUnavailable):
		c.d.Log.WarnContext(b.ctx, "order batch not written: database unavailable", "consumer", c.name, "count", len(msgs), "err", err)
		b.keep(msgs...)
		return
	}
	c.d.Log.InfoContext(b.ctx, "order batch refused, writing one by one", "consumer", c.name, "count", len(msgs), "err", err)
	for i, m := range msgs {
		if c.fenceMoved() {
			c.recheck = append(c.recheck, msgs[i:]...) // the rest waits too
			return
		}
		b.writeOne(m)
	}
}

// fenceMoved holds msgs unwritten: a rebuild moved the loss fence after
// they were read. The consumer reads the fence again, then writes only
// those still pending with it (consumer.recheckHeld).
func (b *batch) fenceMoved(msgs ...model.QueuedOrder) {
	c := b.c
	c.fence = ""
	c.recheck = append(c.recheck, msgs...)
	c.d.Log.WarnContext(b.ctx, "entries held unwritten: a rebuild from the facts moved the loss fence after they were read",
		"consumer", c.name, "count", len(msgs))
}

func (b *batch) writeOne(m model.QueuedOrder) {
	c := b.c
	o := b.order(m)
	existed, err := c.d.Orders.WriteOne(b.ctx, c.fence, &o)
	switch {
	case err == nil:
		b.ack = append(b.ack, m)
		delete(c.failures, m.MsgID)
		if !existed {
			c.d.Metrics.OrdersWritten(1)
		}
	case errors.Is(err, model.ErrSoldOut):
		b.deadLetter(m, ReasonSoldOut, 1)
	case errors.Is(err, model.ErrDuplicateOrder):
		if errors.Is(err, model.ErrUniqueKey) {
			c.dups.Count(b.ctx, m.VoucherID, m.UserID)
		}
		b.deadLetter(m, ReasonDuplicate, 1)
	case errors.Is(err, model.ErrOrderIDTaken):
		c.d.Log.ErrorContext(b.ctx, "order id already used by another order (the id sequence restarted)", orderAttrs(m)...)
		b.deadLetter(m, ReasonIDTaken, 1)
	case errors.Is(err, model.ErrOrderDeadLettered):
		// Another consumer gave it up and may have died before finishing.
		// Finish its dead letter with the reason it recorded.
		b.deadLetter(m, ReasonFailures, 1)
	case errors.Is(err, model.ErrLossFenceMoved):
		b.fenceMoved(m)
	case errors.Is(err, model.ErrUnavailable):
		b.keep(m)
	default:
		c.failures[m.MsgID]++
		attempts := c.failures[m.MsgID] + int(max(m.Deliveries-1, 0))
		c.d.Log.ErrorContext(b.ctx, "order write failed", append(orderAttrs(m), "attempts", attempts, "err", err)...)
		if attempts >= c.cfg.MaxAttempts {
			b.deadLetter(m, ReasonFailures, attempts)
		} else {
			b.keep(m)
		}
	}
}

// deadLetter gives up on m and gives its stock and buyer mark back to Redis.
// The buyer mark stays when the user has an order for the voucher.
// The database first decides, atomically, between written and given up.
// A written order is acknowledged instead.
// One given up already is finished with the reason recorded then.
// The dead-letter script is idempotent.
func (b *batch) deadLetter(m model.QueuedOrder, reason string, attempts int) {
	c := b.c
	out, err := c.d.Orders.RecordDeadLetter(b.ctx, m, reason, attempts)
	switch {
	case errors.Is(err, model.ErrOrderIDTaken):
		// Its id is another order's: nobody can ever write this entry.
	case err != nil:
		c.d.Log.WarnContext(b.ctx, "dead-letter deferred", append(orderAttrs(m), "reason", reason, "err", err)...)
		b.keep(m)
		return
	case out.Written:
		b.ack = append(b.ack, m)
		return
	default:
		reason, attempts = out.Reason, out.Attempts
	}
	has, err := c.d.Orders.HasOrder(b.ctx, m.UserID, m.VoucherID)
	if err != nil {
		b.keep(m)
		return
	}
	done, err := c.d.Queue.DeadLetter(b.ctx, m, reason, attempts, giveBack(reason, has))
	switch {
	case err != nil && done:
		// Dead-lettered; only the buyer mark in the user's home bucket stayed.
		c.d.Log.WarnContext(b.ctx, "dead letter: buyer mark not given back (until a rebuild)", append(orderAttrs(m), "err", err)...)
	case err != nil:
		c.d.Log.WarnContext(b.ctx, "dead-letter deferred", append(orderAttrs(m), "reason", reason, "err", err)...)
		b.keep(m)
		return
	}
	delete(c.failures, m.MsgID)
	if done {
		if c.d.Returned != nil && giveBack(reason, has).Stock {
			c.d.Returned.UnitsBack(b.ctx, m.VoucherID, 1)
		}
		c.d.Metrics.DeadLettered(reason)
		c.d.Log.WarnContext(b.ctx, "order dead-lettered", append(orderAttrs(m), "reason", reason, "attempts", attempts,
			"stock_given_back", reason != ReasonSoldOut, "buyer_kept", has)...)
	}
}

// giveBack is what a dead letter returns to Redis.
// The buyer mark goes back unless the user has an order for the voucher.
// The unit goes back unless the database had none for it (sold out).
// A sold-out dead letter means Redis counted units the database lacks.
// Keeping that unit taken removes the excess one unit at a time.
func giveBack(reason string, hasOrder bool) model.GiveBack {
	return model.GiveBack{Stock: reason != ReasonSoldOut, Buyer: !hasOrder}
}

func (b *batch) malformed(m model.QueuedOrder) {
	c := b.c
	if err := c.d.Queue.DeadLetterMalformed(b.ctx, m, ReasonMalformed+": "+m.Malformed); err != nil {
		c.d.Log.WarnContext(b.ctx, "dead-letter malformed entry", "msg_id", m.MsgID, "err", err)
		b.keep(m)
		return
	}
	c.d.Metrics.DeadLettered(ReasonMalformed)
	c.d.Log.ErrorContext(b.ctx, "malformed stream entry dead-lettered, nothing given back", "msg_id", m.MsgID, "why", m.Malformed, "fields", m.Raw)
}

// orderAttrs are the log attributes of an entry.
func orderAttrs(m model.QueuedOrder) []any {
	return []any{slog.String("msg_id", m.MsgID), slog.Int64("order_id", m.OrderID),
		slog.Int64("user_id", m.UserID), slog.Int64("voucher_id", m.VoucherID)}
}
