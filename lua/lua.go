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
	//go:embed touch.lua
	touchSrc string
)

// The lock scripts. They are immutable once built and safe for concurrent
// use.
var (
	// Acquire is acquire.lua: SET NX PX plus a fencing token INCR.
	Acquire = redis.NewScript(acquireSrc)
	// Unlock is unlock.lua: compare-and-delete.
	Unlock = redis.NewScript(unlockSrc)
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
	// stock, stream append) in one atomic step; it returns a code 0..7. It
	// recognises its own order, so a second run admits nothing more.
	Seckill = redis.NewScript(seckillSrc)
	// SeckillSettle is seckill_settle.lua: after an admission whose answer
	// was lost, report it admitted or void the order id so that it never
	// is.
	SeckillSettle = redis.NewScript(seckillSettleSrc)
	// DeadLetter is deadletter.lua: move a pending order to the dead-letter
	// stream and give its stock and buyer mark back, exactly once.
	DeadLetter = redis.NewScript(deadLetterSrc)
	// Touch is touch.lua: reset the idle time of the pending entries a
	// consumer keeps for a retry, only those still pending with it; it
	// returns their ids.
	Touch = redis.NewScript(touchSrc)
)
