package service

import (
	"context"
	"time"

	"seckill/model"
)

// The stores of async mode (SECKILL_ORDER_MODE=async). repository
// implements them: Admission (Redis state and the admission script),
// OrderStream (stream.orders), Orders, Vouchers and Meta.

// Admitter is the Redis side of async mode: the admission script and each
// voucher's Redis state (stock, buyers, voucher hash), and the epoch.
type Admitter interface {
	// Admit runs the admission script for one order: nil when admitted
	// (queued, status pending); otherwise model.ErrSoldOut,
	// model.ErrDuplicateOrder, model.ErrSeckillNotStarted,
	// model.ErrSeckillEnded, or model.ErrUnavailable wrapping
	// model.ErrVoucherNotLoaded or model.ErrVoucherUnsafe.
	// buckets is the voucher's stock buckets (model.SeckillVoucher.Buckets).
	Admit(ctx context.Context, orderID, userID, voucherID int64, buckets int, now time.Time) error
	// OrderInfo returns the pending or failed record of an order not (yet)
	// in the database; model.ErrOrderNotFound when there is none.
	OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error)
	// Voucher returns the voucher's Redis state, read atomically.
	Voucher(ctx context.Context, voucherID int64) (model.RedisVoucher, error)
	// Vouchers returns the Redis state of each voucher, read atomically.
	Vouchers(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, error)
	// SetState sets the voucher's state (model.VoucherState*).
	SetState(ctx context.Context, voucherID int64, state string) error
	// Load replaces the voucher's Redis state atomically: stock, buyers,
	// the returned sets (the cancelled orders whose units stock counts as
	// on sale) and the voucher hash with state ok.
	Load(ctx context.Context, sv *model.SeckillVoucher, stock int64, buyers, returned []int64) error
	// LoadNew loads a voucher just published unless its Redis state exists
	// (a reconciler owns it then); it reports whether it loaded.
	LoadNew(ctx context.Context, sv *model.SeckillVoucher) (bool, error)
	// Epoch returns the epoch stored in Redis ("" when none).
	Epoch(ctx context.Context) (string, error)
	// Identity returns the answering server's run id and the epoch in
	// it, in one round trip.
	Identity(ctx context.Context) (model.RedisIdentity, error)
	// SetEpoch stores the epoch in Redis.
	SetEpoch(ctx context.Context, epoch string) error
	// LegacyEpoch returns the epoch of the key layout before the shards
	// ("" when none): the same epoch as the database's means this Redis
	// served this deployment before an upgrade.
	LegacyEpoch(ctx context.Context) (string, error)
}

// OrderQueue is the order stream read by a consumer group. Written orders
// are acknowledged and deleted, so the stream holds exactly the orders not
// yet written.
type OrderQueue interface {
	// Snapshot returns the Redis state of each voucher and every entry of
	// the streams holding their orders, each bucket with its entries read
	// atomically (one MULTI per shard).
	Snapshot(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error)
	// EnsureGroup creates the consumer group (and the stream) if missing.
	EnsureGroup(ctx context.Context) error
	// ReadNew returns up to count never-delivered entries, waiting up to
	// block for the first (block < 0: no wait).
	ReadNew(ctx context.Context, consumer string, count int, block time.Duration) ([]model.QueuedOrder, error)
	// Claim takes over up to count entries idle for minIdle from any
	// consumer, scanning from start ("0-0"); it returns them with their
	// delivery counts and the cursor of the next scan ("0-0" when done).
	Claim(ctx context.Context, consumer string, minIdle time.Duration, start string, count int) ([]model.QueuedOrder, string, error)
	// Touch resets the idle time of entries the consumer keeps pending to
	// retry, without counting a delivery, and returns them, but only those
	// still pending with the consumer (atomically checked): an entry
	// another consumer claimed stays with it, one settled is not returned.
	// The consumer must drop the entries not returned, never write them.
	Touch(ctx context.Context, consumer string, msgs []model.QueuedOrder) ([]model.QueuedOrder, error)
	// Ack settles written orders (acknowledge, delete, drop order info).
	Ack(ctx context.Context, msgs []model.QueuedOrder) error
	// DeadLetter moves m to the dead-letter stream, gives back what give
	// says (its unit of stock, its buyer mark), and marks the order
	// failed, all exactly once: false when someone else settled m first.
	// When the voucher's Redis state is not ok it changes nothing and
	// returns model.ErrUnavailable (retry after the state is rebuilt).
	// True with an error: dead-lettered, but the buyer mark of an order
	// admitted away from the user's home bucket (m.Away) was not given
	// back.
	DeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error)
	// DeadLetterMalformed moves an unparseable entry to the dead-letter
	// stream and settles it.
	DeadLetterMalformed(ctx context.Context, m model.QueuedOrder, reason string) error
	// Entries returns every entry of the stream (a full scan).
	Entries(ctx context.Context) ([]model.QueuedOrder, error)
	// RemoveConsumer drops consumer from the group if it has nothing
	// pending.
	RemoveConsumer(ctx context.Context, consumer string) error
	// PruneConsumers drops the consumers with nothing pending that were
	// idle for longer than idle (processes that died); it returns how many.
	PruneConsumers(ctx context.Context, idle time.Duration) (int, error)
}

// AsyncOrderStore is the database side of async mode.
type AsyncOrderStore interface {
	OrderStore
	OrderWriter
	FactsReader
}

// OrderWriter is the database side of the stream consumers.
type OrderWriter interface {
	// WriteBatch writes orders in one transaction, skipping (and
	// returning) those already written, and records their outcome
	// 'written' in it; on model.ErrSoldOut, model.ErrDuplicateOrder,
	// model.ErrOrderIDTaken, model.ErrOrderDeadLettered (an order's
	// outcome is 'dead') or any other error nothing is written.
	WriteBatch(ctx context.Context, orders []model.VoucherOrder) (existing []int64, err error)
	// WriteOne writes one order in its own transaction with its outcome
	// 'written', or reports that it is written already;
	// model.ErrOrderIDTaken when its id belongs to another order,
	// model.ErrOrderDeadLettered when its outcome is 'dead' (it must never
	// be written; its dead letter is to be finished).
	WriteOne(ctx context.Context, o *model.VoucherOrder) (existed bool, err error)
	// RecordDeadLetter records the outcome 'dead' of the entry's order
	// before its dead letter, unless an outcome is recorded already: the
	// database lets one outcome per order win. It returns the outcome
	// that holds: Written (acknowledge the entry, give nothing back), or
	// the dead letter recorded first (finish it, with its reason);
	// model.ErrOrderIDTaken when the id is another order's (the entry can
	// never be written).
	RecordDeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int) (model.Outcome, error)
	// HasOrder reports whether the user has an order for the voucher.
	HasOrder(ctx context.Context, userID, voucherID int64) (bool, error)
}

// FactsReader reads the database's facts for the reconciler.
type FactsReader interface {
	// OrderFacts reads in one consistent snapshot the number of orders of
	// each voucher, which entries' orders are written and, with buyers,
	// the users holding an order per voucher.
	OrderFacts(ctx context.Context, voucherIDs []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error)
}

// AsyncVoucherStore adds the listing of live vouchers to VoucherStore.
type AsyncVoucherStore interface {
	VoucherStore
	// ListLive returns the seckill rows whose sale has not ended at now.
	ListLive(ctx context.Context, now time.Time) ([]model.SeckillVoucher, error)
}

// MetaStore keeps named values in the database (the epoch).
type NamedValues interface {
	// Get returns the value of name ("" when none).
	Get(ctx context.Context, name string) (string, error)
	// InsertIfAbsent stores value unless name has one already.
	InsertIfAbsent(ctx context.Context, name, value string) error
	// List returns the names and values of the rows whose name starts
	// with prefix.
	List(ctx context.Context, prefix string) (map[string]string, error)
}

// IDSequence repairs the order-id sequence after Redis lost it.
type IDSequence interface {
	// Resync moves the sequence past every id the database holds.
	Resync(ctx context.Context) error
}

// ConsumerObserver receives the events of the stream consumers that the
// metrics count. A nil ConsumerObserver is allowed.
type ConsumerObserver interface {
	// BatchRead is called with the size of each batch a consumer handles.
	BatchRead(size int)
	// OrdersWritten is called with the number of orders a batch wrote.
	OrdersWritten(n int)
	// DeadLettered is called once per order given up, with the reason.
	DeadLettered(reason string)
	// Claimed is called with the number of entries claimed from other
	// consumers.
	Claimed(n int)
}

type nopConsumerObserver struct{}

func (nopConsumerObserver) BatchRead(int)       {}
func (nopConsumerObserver) OrdersWritten(int)   {}
func (nopConsumerObserver) DeadLettered(string) {}
func (nopConsumerObserver) Claimed(int)         {}
