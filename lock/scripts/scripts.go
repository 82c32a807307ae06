// Package scripts embeds the Lua scripts that package lock runs, beside it:
// acquire and release, for one lock, a batch, a Redis Cluster node, and the
// re-entrant lock. Each script opens with a header listing its KEYS, ARGV
// and return values, and is wrapped once with redis.NewScript, whose Run
// sends EVALSHA and falls back to EVAL when the server does not have the
// script cached yet. It imports nothing of the project; the Redis store's
// scripts are in repository/redisstore/scripts.
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

// The lock scripts. They are immutable once built and safe for concurrent
// use.
var (
	// Acquire is acquire.lua: SET NX PX plus a fencing token INCR.
	Acquire = load("acquire.lua")
	// Unlock is unlock.lua: compare-and-delete.
	Unlock = load("unlock.lua")
	// AcquireAll is acquire_all.lua: Acquire for many locks in one call,
	// each with its own owner token; one fencing token (or 0) per lock.
	AcquireAll = load("acquire_all.lua")
	// UnlockAll is unlock_all.lua: Unlock for many locks in one call; 1 or
	// 0 per lock.
	UnlockAll = load("unlock_all.lua")
	// AcquireNode is acquire_node.lua: AcquireAll for the keys of one
	// Redis Cluster node, given in ARGV (keys of many slots).
	AcquireNode = load("acquire_node.lua")
	// UnlockNode is unlock_node.lua: UnlockAll for the keys of one Redis
	// Cluster node, given in ARGV.
	UnlockNode = load("unlock_node.lua")
	// ReentrantLock is reentrant_lock.lua: hash owner -> count acquire.
	ReentrantLock = load("reentrant_lock.lua")
	// ReentrantUnlock is reentrant_unlock.lua: decrement, delete at zero,
	// publish the release.
	ReentrantUnlock = load("reentrant_unlock.lua")
	// ReentrantRenew is reentrant_renew.lua: the watchdog's renewal.
	ReentrantRenew = load("reentrant_renew.lua")
)
