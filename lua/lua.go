// Package lua embeds the project's Redis Lua scripts. Each script opens with
// a header listing its KEYS, ARGV and return values, and is wrapped once
// with redis.NewScript, whose Run sends EVALSHA and falls back to EVAL when
// the server does not have the script cached yet. The values a script
// returns that its callers interpret are named here, beside the script.
//
// The package is a leaf: it imports nothing of the project. Package lock
// runs the lock scripts, package repository the async seckill scripts.
package lua

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed unlock.lua
	unlockSrc string
	//go:embed acquire_all.lua
	acquireAllSrc string
	//go:embed acquire_node.lua
	acquireNodeSrc string
	//go:embed unlock_node.lua
	unlockNodeSrc string
	//go:embed unlock_all.lua
	unlockAllSrc string
	//go:embed reentrant_lock.lua
	reentrantLockSrc string
	//go:embed reentrant_unlock.lua
	reentrantUnlockSrc string
	//go:embed reentrant_renew.lua
	reentrantRenewSrc string
	//go:embed seckill.lua
	seckillSrc string
	//go:embed deadletter.lua
	deadLetterSrc string
	//go:embed seckill_settle.lua
	seckillSettleSrc string
	//go:embed seckill_away.lua
	seckillAwaySrc string
	//go:embed seckill_release.lua
	seckillReleaseSrc string
	//go:embed touch.lua
	touchSrc string
	//go:embed giveback.lua
	giveBackSrc string
	//go:embed idempotency_begin.lua
	idempotencyBeginSrc string
	//go:embed idempotency_finish.lua
	idempotencyFinishSrc string
)

// The Idempotency-Key scripts, one key each.
var (
	// IdempotencyBegin is idempotency_begin.lua: claim a key for an
	// attempt, or return its record (fingerprint, answer).
	IdempotencyBegin = redis.NewScript(idempotencyBeginSrc)
	// IdempotencyFinish is idempotency_finish.lua: store the attempt's
	// answer, or give the key up, if the attempt still holds it.
	IdempotencyFinish = redis.NewScript(idempotencyFinishSrc)
)

// The lock scripts. They are immutable once built and safe for concurrent
// use.
var (
	// Acquire is acquire.lua: SET NX PX plus a fencing token INCR.
	Acquire = redis.NewScript(acquireSrc)
	// Unlock is unlock.lua: compare-and-delete.
	Unlock = redis.NewScript(unlockSrc)
	// AcquireAll is acquire_all.lua: Acquire for many locks in one call,
	// each with its own owner token; one fencing token (or 0) per lock.
	AcquireAll = redis.NewScript(acquireAllSrc)
	// UnlockAll is unlock_all.lua: Unlock for many locks in one call; 1 or
	// 0 per lock.
	UnlockAll = redis.NewScript(unlockAllSrc)
	// AcquireNode is acquire_node.lua: AcquireAll for the keys of one
	// Redis Cluster node, given in ARGV (keys of many slots).
	AcquireNode = redis.NewScript(acquireNodeSrc)
	// UnlockNode is unlock_node.lua: UnlockAll for the keys of one Redis
	// Cluster node, given in ARGV.
	UnlockNode = redis.NewScript(unlockNodeSrc)
	// ReentrantLock is reentrant_lock.lua: hash owner -> count acquire.
	ReentrantLock = redis.NewScript(reentrantLockSrc)
	// ReentrantUnlock is reentrant_unlock.lua: decrement, delete at zero,
	// publish the release.
	ReentrantUnlock = redis.NewScript(reentrantUnlockSrc)
	// ReentrantRenew is reentrant_renew.lua: the watchdog's renewal.
	ReentrantRenew = redis.NewScript(reentrantRenewSrc)
)

// The async seckill scripts (SECKILL_ORDER_MODE=async).
var (
	// Seckill is seckill.lua: the admission of one order (window, buyer,
	// stock, stream append) in one atomic step; it returns one of the
	// Seckill* codes below. It recognises its own order, so a second run
	// admits nothing more.
	Seckill = redis.NewScript(seckillSrc)
	// SeckillSettle is seckill_settle.lua: after an admission whose answer
	// was lost, report it admitted or void the order id so that it never
	// is: SettleAdmitted or SettleVoid.
	SeckillSettle = redis.NewScript(seckillSettleSrc)
	// SeckillAway is seckill_away.lua: the admission of an order in a
	// bucket other than the user's home bucket (a voucher whose stock is
	// split in buckets), after the home bucket reserved the buyer mark
	// (SeckillMove); it returns a Seckill* code (never SeckillDuplicate).
	SeckillAway = redis.NewScript(seckillAwaySrc)
	// SeckillRelease is seckill_release.lua: end a home bucket's
	// reservation, the order admitted elsewhere ("moved") or nowhere
	// ("void").
	SeckillRelease = redis.NewScript(seckillReleaseSrc)
	// DeadLetter is deadletter.lua: move a pending order to the dead-letter
	// stream and give its stock and buyer mark back, exactly once:
	// DeadLettered, DeadLetterNotPending or DeadLetterUnsafe.
	DeadLetter = redis.NewScript(deadLetterSrc)
	// Touch is touch.lua: reset the idle time of the pending entries a
	// consumer keeps for a retry, only those still pending with it; it
	// returns their ids.
	Touch = redis.NewScript(touchSrc)
	// GiveBack is giveback.lua: put a cancelled order's unit back into a
	// bucket's stock, once per order id: GiveBackApplied, GiveBackAlready
	// or GiveBackNotLoaded.
	GiveBack = redis.NewScript(giveBackSrc)
)

// The results GiveBack (giveback.lua) returns.
const (
	GiveBackApplied   = 1
	GiveBackAlready   = 0
	GiveBackNotLoaded = -1
)

// The integer codes Seckill (seckill.lua) returns. Nothing changes in Redis
// unless the code is SeckillOK.
const (
	// SeckillOK: admitted (stock decremented, buyer added, order appended
	// to the stream, order info pending), or admitted already by an
	// earlier run whose reply was lost.
	SeckillOK = 0
	// SeckillSoldOut: no stock left.
	SeckillSoldOut = 1
	// SeckillDuplicate: the user already bought the voucher.
	SeckillDuplicate = 2
	// SeckillNotStarted: before the voucher's begin time.
	SeckillNotStarted = 3
	// SeckillEnded: at or after the voucher's end time.
	SeckillEnded = 4
	// SeckillNotLoaded: the voucher hash or the stock key is missing.
	SeckillNotLoaded = 5
	// SeckillUnsafe: the voucher's state is not "ok" (Redis lost data, or
	// a reconciler is at work).
	SeckillUnsafe = 6
	// SeckillVoid: the order id was given up (its order-info key is
	// OrderInfoVoid, or names another order).
	SeckillVoid = 7
	// SeckillMove: the user's home bucket has no stock left; the buyer
	// mark is reserved there, and the order info says moving: admit the
	// order in another bucket, then release the reservation.
	SeckillMove = 8
)

// The verdicts SeckillSettle (seckill_settle.lua) returns.
const (
	// SettleAdmitted: the order-info key names this user and voucher: the
	// admission happened.
	SettleAdmitted = 0
	// SettleVoid: not admitted, or not known here; the order id is void
	// (the key set to OrderInfoVoid when it was missing).
	SettleVoid = 1
	// SettleMoving: the run was a home bucket's reservation (SeckillMove).
	SettleMoving = 2
)

// The results DeadLetter (deadletter.lua) returns.
const (
	// DeadLettered: the entry moved to the dead-letter stream, its stock
	// (and buyer mark, when asked) given back.
	DeadLettered = 1
	// DeadLetterNotPending: the entry was no longer pending (another
	// consumer settled it); nothing changes.
	DeadLetterNotPending = 0
	// DeadLetterUnsafe: the voucher's Redis state is missing or not "ok";
	// nothing changes.
	DeadLetterUnsafe = -1
)

// The values of an order-info key (seckill:{<tag>}:orderinfo:<orderId>)
// the scripts write: "<userId>:<voucherId>:<status>" with status
// OrderInfoPending (seckill.lua, seckill_away.lua), OrderInfoFailed
// (deadletter.lua) or OrderInfoMoving (seckill.lua's reservation in a home
// bucket), or OrderInfoVoid alone (seckill_settle.lua, seckill_release.lua).
const (
	OrderInfoPending = "pending"
	OrderInfoFailed  = "failed"
	OrderInfoMoving  = "moving"
	OrderInfoVoid    = "void"
)
