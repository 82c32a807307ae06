package service

import "seckill/model"

// What is pending in async mode, computed one way for the audit, the
// start-up check and the rebuild: an order is pending while its stream
// entry exists and its order is not written. The caller reads which
// orders are written in the same database snapshot as the counts it
// compares them with, so an order committed meanwhile is counted once:
// written or pending, never both.

// queued returns the stream entries that name an order (parsed, not
// settled already) of the vouchers of accepts (of every voucher when
// accepts is nil).
func queued(entries []model.QueuedOrder, accepts func(voucherID int64) bool) []model.QueuedOrder {
	var out []model.QueuedOrder
	for _, e := range entries {
		if e.Malformed == "" && !e.Deleted && (accepts == nil || accepts(e.VoucherID)) {
			out = append(out, e)
		}
	}
	return out
}

// pending returns the entries among queued(entries, nil) whose order is
// not in written: admitted in Redis and not yet in the database.
func pending(entries []model.QueuedOrder, written map[int64]bool) []model.QueuedOrder {
	var out []model.QueuedOrder
	for _, e := range queued(entries, nil) {
		if !written[e.OrderID] {
			out = append(out, e)
		}
	}
	return out
}
