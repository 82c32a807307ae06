package model

import "strconv"

// The Redis keys of the locks that service takes. Every other Redis key is
// in repository/keys.go. These live here because service imports only lock
// and model. The lock family derives each lock's fencing counter and
// release channel from them (lock.FenceKey, lock.ReleaseChannel).

// ReconcileLockKey serializes reconcilers and rebuilds across processes.
const ReconcileLockKey = "lock:seckill:reconcile"

// OrderLockKey is lock:order:<userId>, the per-user lock of a purchase. The
// service and the tools that take it call this one function.
func OrderLockKey(userID int64) string {
	return "lock:order:" + strconv.FormatInt(userID, 10)
}
