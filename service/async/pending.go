package async

import "seckill/model"

// What is pending in async mode, computed one way for the audit, the check and
// the rebuild. An order is pending while its stream entry exists and its order
// is not written. The caller reads the written orders in the same snapshot as
// the counts. So an order committed meanwhile is counted once: written or
// pending.

// queued returns the stream entries that name an order of the vouchers of
// accepts. Malformed and settled entries are left out; a nil accepts takes
// every voucher.
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
