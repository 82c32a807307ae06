// Package scripts embeds the Lua scripts that the Redis store
// (repository/redisstore) runs, beside it: the async admission and its
// companions, the stream's dead letters and touches, the units given back,
// the idempotency keys, the login codes, the waiting room and the live
// history. Each script opens with a header listing its KEYS, ARGV and
// return values, and is wrapped once with redis.NewScript, whose Run sends
// EVALSHA and falls back to EVAL when the server does not have the script
// cached yet. The values a script returns that the store interprets are
// named here, beside the script.
//
// A header's KEYS lines are the one place a script's keys are written
// down; the store's tests check its key builders against them
// (testkit/scripttest reads them). The package imports nothing of the
// project; the lock's scripts are in lock/scripts.
package scripts

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

// sources holds every script of the package.
//
//go:embed *.lua
var sources embed.FS

// load wraps the script in file name once; a missing file is a build
// mistake, so it panics at start-up.
func load(name string) *redis.Script {
	b, err := sources.ReadFile(name)
	if err != nil {
		panic("scripts: " + err.Error())
	}
	return redis.NewScript(string(b))
}

// The Idempotency-Key scripts, each on a key's record and its user's
// index of live keys (one slot).
var (
	// IdempotencyBegin is idempotency_begin.lua: claim a key for an
	// attempt within the user's cap, or return its record (fingerprint,
	// answer).
	IdempotencyBegin = load("idempotency_begin.lua")
	// IdempotencyFinish is idempotency_finish.lua: store the attempt's
	// answer, or give the key up, if the attempt still holds it.
	IdempotencyFinish = load("idempotency_finish.lua")
)

// WaitingRoom is waiting_room.lua: one step of a voucher's waiting room
// (join, poll, bought, soldout or audit) in one call.
var WaitingRoom = load("waiting_room.lua")

// LiveHistory is live_history.lua: add a publication's answers by code to
// a voucher's per-second history, within its bound.
var LiveHistory = load("live_history.lua")

// CheckCode is check_code.lua: compare a login code and count wrong
// guesses in one step.
var CheckCode = load("check_code.lua")

// The async seckill scripts (SECKILL_ORDER_MODE=async).
var (
	// Seckill is seckill.lua: the admission of one order in one bucket
	// (window, buyer, stock, stream append) in one atomic step; it returns
	// one of the Seckill* codes below. ARGV[6] picks the bucket's mode:
	// SeckillOnly, SeckillHome or SeckillAway. A second run of one order
	// admits nothing more.
	Seckill = load("seckill.lua")
	// SeckillSettle is seckill_settle.lua: after an admission whose answer
	// was lost, report it admitted or void the order id so that it never
	// is: SettleAdmitted or SettleVoid.
	SeckillSettle = load("seckill_settle.lua")
	// SeckillRelease is seckill_release.lua: end a home bucket's
	// reservation, the order admitted elsewhere ("moved") or nowhere
	// ("void").
	SeckillRelease = load("seckill_release.lua")
	// DeadLetter is deadletter.lua: move a pending order to the dead-letter
	// stream and give its stock and buyer mark back, exactly once:
	// DeadLettered, DeadLetterNotPending or DeadLetterUnsafe.
	DeadLetter = load("deadletter.lua")
	// Touch is touch.lua: reset the idle time of the pending entries a
	// consumer keeps for a retry, only those still pending with it; it
	// returns their ids.
	Touch = load("touch.lua")
	// GiveBack is giveback.lua: put a cancelled order's unit back into a
	// bucket's stock, once per order id: GiveBackApplied, GiveBackAlready
	// or GiveBackNotLoaded.
	GiveBack = load("giveback.lua")
)

// The results GiveBack (giveback.lua) returns.
const (
	GiveBackApplied   = 1
	GiveBackAlready   = 0
	GiveBackNotLoaded = -1
)

// The modes of Seckill (seckill.lua's ARGV[6]).
const (
	// SeckillOnly: the voucher's stock is in one bucket.
	SeckillOnly = ""
	// SeckillHome: the user's home bucket of a split voucher; sold out
	// there, it reserves the buyer mark and answers SeckillMove.
	SeckillHome = "reserve"
	// SeckillAway: another bucket, after the home bucket's SeckillMove;
	// it never answers SeckillDuplicate.
	SeckillAway = "away"
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
// OrderInfoPending (seckill.lua), OrderInfoFailed
// (deadletter.lua) or OrderInfoMoving (seckill.lua's reservation in a home
// bucket), or OrderInfoVoid alone (seckill_settle.lua, seckill_release.lua).
const (
	OrderInfoPending = "pending"
	OrderInfoFailed  = "failed"
	OrderInfoMoving  = "moving"
	OrderInfoVoid    = "void"
)
