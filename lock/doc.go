// Package lock is a family of distributed locks behind one interface.
// The family runs from no lock at all to ZooKeeper. The seckill service
// takes lock:order:<userId> (OrderKey, keys.go) with the backend named by
// SECKILL_LOCK_MODE.
//
// Every backend implements Locker. Obtain(ctx, key) returns a Lock or
// ErrNotObtained. When ctx ends during a wait, the error matches both
// ErrNotObtained and ctx.Err(). Lock.Release returns ErrNotHeld when the
// holder no longer owns the lock.
//
// The options (TTL, Wait, Watchdog, backoff) are shared, with their
// defaults in DefaultOptions. Waiting backends retry with exponential
// backoff and full jitter, and honour the context. Owner tokens come from
// crypto/rand. The Lua scripts live beside it in lock/scripts, the only
// package of the module this one imports.
//
// Each mode has one file and a test file of the same name. ObtainAll and
// ReleaseAll take the locks of many keys at once. TestContract runs one
// contract against every backend. docs/locks.md maps the files, says when
// to use which mode, and lists the failures the tests reproduce.
package lock
