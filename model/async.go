package model

import (
	"errors"
	"time"
)

// Async mode (SECKILL_ORDER_MODE=async): admission happens in Redis, orders
// reach the database through the stream.orders consumer group.

// States of a voucher in Redis (field "state" of seckill:voucher:<id>). The
// admission script admits only in state ok.
const (
	// VoucherStateOK: the Redis stock and buyers were built from the
	// database's facts and are maintained by the admission script.
	VoucherStateOK = "ok"
	// VoucherStateFrozen: a reconciler is checking or rebuilding the voucher;
	// admissions wait (503) for the few milliseconds this takes.
	VoucherStateFrozen = "frozen"
	// VoucherStateUnsafe: Redis lost data the service had put there, so
	// admissions it accepted may be lost. A rebuild from the facts clears
	// it: the service's own (SECKILL_AUTO_REBUILD) or the operator's.
	VoucherStateUnsafe = "unsafe"
)

// Errors of the async admission. Both come wrapped with ErrUnavailable
// (503): the voucher cannot be sold safely right now.
var (
	// ErrVoucherNotLoaded means the voucher's Redis state (stock key or
	// voucher hash) is missing.
	ErrVoucherNotLoaded = errors.New("voucher not loaded in redis")
	// ErrVoucherUnsafe means the voucher's Redis state is not trusted
	// (unsafe, or frozen while a reconciler works on it).
	ErrVoucherUnsafe = errors.New("voucher state in redis not trusted")
	// ErrOrderIDTaken means an order's id belongs to another order in the
	// database. The ID sequence restarted after Redis lost its data. The order
	// can never be written under the id it was announced with.
	ErrOrderIDTaken = errors.New("order id taken by another order")
	// ErrLossFenceMoved means a rebuild from the facts moved the loss fence
	// after the consumer read its entries. The entries may come from a Redis
	// that lost its data, so their orders are not written.
	ErrLossFenceMoved = errors.New("loss fence moved: entries read before a rebuild")
)

// AdmitMode is how one bucket of a voucher's Redis stock admits an order
// (docs/async.md, "Stock buckets").
type AdmitMode int

const (
	// AdmitOnly: the voucher's stock is in one bucket.
	AdmitOnly AdmitMode = iota
	// AdmitHome: the user's home bucket of a split voucher. With no stock
	// left there, it reserves the buyer mark and answers ErrNextBucket.
	AdmitHome
	// AdmitAway: another bucket, after the home bucket's ErrNextBucket. It
	// never answers ErrDuplicateOrder.
	AdmitAway
)

// Answers of an admission that never reach a client: the service's step
// decides what follows.
var (
	// ErrNextBucket is the answer of a home bucket that had no stock and
	// reserved the buyer mark: admit the order in another bucket, then end
	// the reservation.
	ErrNextBucket = errors.New("admit in another bucket")
	// ErrOrderVoid means the settlement of an admission whose answer was
	// lost gave its order id up: no bucket admits it, ever.
	ErrOrderVoid = errors.New("order id void")
)

// GiveBackResult is what giving a cancelled order's unit back to its
// bucket's Redis stock did.
type GiveBackResult int

const (
	GiveBackApplied GiveBackResult = 1  // the unit was added to the bucket's stock
	GiveBackAlready GiveBackResult = 0  // the order's unit was given back before
	GiveBackUnready GiveBackResult = -1 // the bucket's stock is not loaded: retry later
)

// QueuedOrder is one entry of stream.orders: an order admitted in Redis and
// not yet written to the database.
type QueuedOrder struct {
	MsgID     string // stream entry id
	OrderID   int64
	UserID    int64
	VoucherID int64
	// Deliveries is how many times the group delivered the entry (XPENDING),
	// known for claimed entries; 0 when unknown.
	Deliveries int64
	// Malformed says why the entry could not be parsed ("" when it could);
	// Raw then holds its fields for the dead-letter stream.
	Malformed string
	Raw       map[string]string
	// Deleted marks a pending entry whose stream entry is gone (someone
	// settled it already): it only needs an acknowledgement.
	Deleted bool
	// Away marks an order admitted in a bucket other than the user's home
	// bucket. Its buyer mark is in shard BuyerShard, not in the entry's own.
	Away       bool
	BuyerShard int
	// TraceParent is the W3C traceparent of the request that admitted the
	// order ("" when it was not traced).
	TraceParent string
	// Admitted is when Redis admitted the order: the milliseconds of its
	// stream entry id, on the Redis server's clock. Zero when unknown.
	Admitted time.Time
}

// GiveBack says what a dead letter returns to the voucher's Redis state:
// its unit of stock, and its buyer mark (the user may buy again).
type GiveBack struct{ Stock, Buyer bool }

// RedisIdentity says which Redis data a process talks to. RunID is new at each
// start and differs per node; Epoch is the async epoch stored there.
type RedisIdentity struct{ RunID, Epoch string }

// RedisVoucher is the state of one voucher in Redis.
type RedisVoucher struct {
	Exists      bool   // the voucher hash exists
	State       string // VoucherState*
	StockExists bool
	Stock       int64
	Buyers      int64 // size of the buyers set
	// Returned is how many cancelled orders' units the voucher's buckets
	// took back (the returned sets' sizes summed).
	Returned int64
}

// CheckAsync fills Oversold and Consistent from the counts, with invariant 5.
// RedisStock and Pending must be set. Invariant 5: Redis stock + orders +
// pending + give-backs due = initial stock. The buyers set size must also equal
// orders + cancelled + pending. returned is how many cancelled orders Redis
// took back, read with the Redis stock.
func (a *Audit) CheckAsync(buyers, returned int64) {
	if a.RedisStock == nil || a.Pending == nil {
		a.Check()
		a.Consistent = false
		return
	}
	due := a.Cancelled - returned
	a.GivebacksDue = &due
	c := a.Counts()
	c.Async = &AsyncCounts{RedisStock: *a.RedisStock, Pending: *a.Pending, Buyers: &buyers, Returned: &returned}
	a.judge(c)
}

// OrderFacts is what the database says about some vouchers' orders and stream
// entries. It is read in one transaction, one consistent snapshot. So an order
// committed meanwhile is counted once: written, or pending.
type OrderFacts struct {
	// Orders is the number of live orders (unpaid and paid) of each
	// voucher that has some.
	Orders map[int64]int64
	// Cancelled counts each voucher's cancelled orders (their units are
	// back on sale; Redis holds them in its returned sets once given back).
	Cancelled map[int64]int64
	// CancelledIDs lists them by id (only with Buyers).
	CancelledIDs map[int64][]int64
	// Written holds the order ids of the entries whose order is in the
	// database (same id, user and voucher).
	Written map[int64]bool
	// Buyers lists the users holding an order, cancelled ones included
	// (the slot stays taken), per voucher (only when asked for).
	Buyers map[int64][]int64
}

// ErrNotGrouped means a group commit did not decide an order: its buyer
// writes it with the one-order transaction instead. It never reaches a
// client.
var ErrNotGrouped = errors.New("order not decided by its group")
