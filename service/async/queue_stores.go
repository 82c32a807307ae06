package async

import (
	"context"
	"time"

	"seckill/model"
	"seckill/service/internal/orderkit"
)

// The stores of the order queue: admitting into it, reading it, writing from
// it. Package repository implements them.

// AsyncState is the Redis state of async mode beside the order stream: each
// voucher's buckets, the epoch and the order-info records. seckill.lua's
// caller is SeckillScript (admission.go).
type AsyncState interface {
	// OrderInfo returns the record of an order not yet in the database.
	// It returns model.ErrOrderNotFound when there is none.
	OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error)
	// Voucher returns the voucher's Redis state, read atomically.
	Voucher(ctx context.Context, voucherID int64) (model.RedisVoucher, error)
	// Vouchers returns the Redis state of each voucher, read atomically.
	Vouchers(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, error)
	// SetState sets the voucher's state (model.VoucherState*).
	SetState(ctx context.Context, voucherID int64, state string) error
	// Load replaces the voucher's Redis state atomically, with state ok. The
	// state is the stock, the buyers, the voucher hash and the returned sets.
	// The returned sets list cancelled orders whose units are on sale again.
	Load(ctx context.Context, sv *model.SeckillVoucher, stock int64, buyers, returned []int64) error
	// LoadNew loads a voucher just published, unless its Redis state exists.
	// It reports whether it loaded. A state that names another sale (window,
	// buckets or stock) is model.ErrForeignState.
	LoadNew(ctx context.Context, sv *model.SeckillVoucher) (bool, error)
	// Epoch returns the epoch stored in Redis ("" when none).
	Epoch(ctx context.Context) (string, error)
	// Identity returns the answering server's run id and its epoch in one round
	// trip.
	Identity(ctx context.Context) (model.RedisIdentity, error)
	// SetEpoch stores the epoch in Redis.
	SetEpoch(ctx context.Context, epoch string) error
	// LegacyEpoch returns the epoch under the unsharded key layout ("" when
	// none). The database's epoch there means this Redis served this deployment
	// unsharded.
	LegacyEpoch(ctx context.Context) (string, error)
}

// OrderQueue is the order stream read by a consumer group.
// Written orders are acknowledged and deleted.
// So the stream holds exactly the orders not yet written.
type OrderQueue interface {
	// Snapshot returns each voucher's Redis state and its stream entries.
	// Each shard is read atomically, in one MULTI.
	Snapshot(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error)
	// EnsureGroup creates the consumer group (and the stream) if missing.
	EnsureGroup(ctx context.Context) error
	// ReadNew returns up to count new entries.
	// It waits up to block for the first; block < 0 does not wait.
	ReadNew(ctx context.Context, consumer string, count int, block time.Duration) ([]model.QueuedOrder, error)
	// Claim takes over up to count entries idle for minIdle, scanning from
	// start. It returns them with their delivery counts and the next cursor.
	// The cursor is "0-0" when the scan is done.
	Claim(ctx context.Context, consumer string, minIdle time.Duration, start string, count int) ([]model.QueuedOrder, string, error)
	// Touch resets the idle time of entries kept for a retry, counting no
	// delivery. It returns only those still pending with the consumer, checked
	// atomically. The consumer must drop the entries not returned, never write
	// them.
	Touch(ctx context.Context, consumer string, msgs []model.QueuedOrder) ([]model.QueuedOrder, error)
	// Ack settles written orders (acknowledge, delete, drop order info).
	Ack(ctx context.Context, msgs []model.QueuedOrder) error
	// DeadLetter moves m to the dead-letter stream and marks the order failed.
	// It gives back what give says: the unit of stock, the buyer mark.
	// All of it happens exactly once; false means someone else settled m first.
	// When the voucher's state is not ok it returns model.ErrUnavailable.
	// True with an error means the buyer mark of an away order stayed taken.
	DeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error)
	// DeadLetterMalformed dead-letters an unparseable entry and settles it.
	DeadLetterMalformed(ctx context.Context, m model.QueuedOrder, reason string) error
	// Entries returns every entry of the stream (a full scan).
	Entries(ctx context.Context) ([]model.QueuedOrder, error)
	// RemoveConsumer drops consumer from the group if it has nothing pending.
	RemoveConsumer(ctx context.Context, consumer string) error
	// PruneConsumers drops the dead consumers and returns how many.
	// A dead consumer has nothing pending and was idle for longer than idle.
	PruneConsumers(ctx context.Context, idle time.Duration) (int, error)
}

// AsyncOrderStore is the database side of async mode.
type AsyncOrderStore interface {
	orderkit.OrderStore
	OrderWriter
	FactsReader
}

// OrderWriter is the database side of the stream consumers.
type OrderWriter interface {
	// WriteBatch writes orders and their outcome 'written' in one transaction.
	// It skips and returns the orders already written.
	// On any error nothing is written.
	// model.ErrOrderDeadLettered means an order's outcome is 'dead'.
	// model.ErrLossFenceMoved means fence is no longer the loss fence's
	// value: nothing is written.
	WriteBatch(ctx context.Context, fence string, orders []model.VoucherOrder) (existing []int64, err error)
	// WriteOne writes one order and its outcome 'written' in its own
	// transaction. It reports whether the order was written already.
	// model.ErrOrderIDTaken means the id belongs to another order.
	// model.ErrOrderDeadLettered means the outcome is 'dead': finish the dead
	// letter. The fence is checked as in WriteBatch.
	WriteOne(ctx context.Context, fence string, o *model.VoucherOrder) (existed bool, err error)
	// RecordDeadLetter records the outcome 'dead' before the dead letter.
	// The database lets one outcome per order win, and it returns the winner.
	// Written means: acknowledge the entry and give nothing back.
	// A dead letter recorded first means: finish it, with its reason.
	// model.ErrOrderIDTaken means the id is another order's.
	RecordDeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int) (model.Outcome, error)
	// HasOrder reports whether the user has an order for the voucher.
	HasOrder(ctx context.Context, userID, voucherID int64) (bool, error)
}

// LossFence is the database's fence between the consumers' reads of the
// stream and the writes of their orders (docs/async.md, "the loss fence").
type LossFence interface {
	// Current returns the fence's value. It creates the fence when absent.
	Current(ctx context.Context) (string, error)
	// Move gives the fence a new value. It returns once every write that
	// checked the old value has ended. Later writes under it are refused.
	Move(ctx context.Context) error
}

// FactsReader reads the database's facts for the reconciler.
type FactsReader interface {
	// OrderFacts reads the facts of the vouchers in one consistent snapshot.
	// They are the orders per voucher and which entries' orders are written.
	// With buyers, they list the users holding an order per voucher.
	OrderFacts(ctx context.Context, voucherIDs []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error)
}

// AsyncVoucherStore adds the listing of live vouchers to VoucherStore.
type AsyncVoucherStore interface {
	VoucherStore
	// ListLive returns the seckill rows whose sale has not ended at now.
	ListLive(ctx context.Context, now time.Time) ([]model.SeckillVoucher, error)
}

// NamedValues keeps named values in the database: the epoch, the loss records.
type NamedValues interface {
	// Get returns the value of name ("" when none).
	Get(ctx context.Context, name string) (string, error)
	// InsertIfAbsent stores value unless name has one already.
	InsertIfAbsent(ctx context.Context, name, value string) error
	// List returns the names and values of the rows whose name starts with
	// prefix.
	List(ctx context.Context, prefix string) (map[string]string, error)
}

// IDSequence repairs the order-id sequence after Redis lost it.
type IDSequence interface {
	// Resync moves the sequence past every id the database holds.
	Resync(ctx context.Context) error
}

// ConsumerObserver receives the consumer events that the metrics count.
// A nil ConsumerObserver is allowed.
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
