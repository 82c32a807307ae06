package lock

import "strconv"

// The Redis keys of the locks that service takes. Every other Redis key is
// in repository/redisstore/keys.go. Each lock's fencing counter and release
// channel derive from its key (FenceKey, ReleaseChannel).

// ReconcileKey serializes reconcilers and rebuilds across processes.
const ReconcileKey = "lock:seckill:reconcile"

// OrderKey is lock:order:<userId>, the per-user lock of a purchase. The
// service and the tools that take it call this one function.
func OrderKey(userID int64) string {
	return "lock:order:" + strconv.FormatInt(userID, 10)
}
