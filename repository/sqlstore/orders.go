package sqlstore

// Orders stores orders in tb_voucher_order. It joins the stores of the
// order table's uses, so that one value serves every service store.
type Orders struct {
	*OrderCommits   // the sync path: one order per transaction
	*GroupCommits   // the sync path: a group of orders per transaction
	*QueuedOrders   // the async consumers' writes and dead letters
	*OrderReads     // reads of orders and of a voucher's facts
	*OrderLifecycle // pay, cancel, expire, give back
}

// NewOrders returns the order store.
func NewOrders(db *DB) *Orders {
	g := db.Gorm
	return &Orders{&OrderCommits{db: g}, &GroupCommits{db: g}, &QueuedOrders{db: g}, &OrderReads{db: g}, &OrderLifecycle{db: g}}
}
