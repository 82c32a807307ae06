package faults

import (
	"context"
	"time"
)

// The fault suite's cases: each one's fault, its expectation and its
// judgement (suite.run runs them).

// faultCase is one case of the suite.
type faultCase struct {
	Name                string
	LockMode, OrderMode string
	Fault, Expect       string   // what is done, what must hold (RESULTS.md)
	Env                 []string // more instance settings
	Sentinel, Redlock   bool     // Redis through private Sentinels; three private Redlock nodes
	// Cluster: Redis is a private Redis Cluster (three masters, a replica
	// each), the instances on SECKILL_REDIS_CLUSTER_ADDRS.
	Cluster bool
	// ReplicaLag: the Sentinel case first makes the replica fall behind.
	ReplicaLag bool
	// KillsInstance: the fault kills an instance under its requests
	// (transport errors expected).
	KillsInstance bool
	// Weak marks an expected-weak demonstration: its weakness is reported
	// ("shown"), never failed. The invariants still are.
	Weak bool
	// FaultPct is where in the load (percent of the purchases sent) the
	// fault starts.
	FaultPct int
	// PayEvery: every PayEvery-th buyer pays at once (0: nobody pays).
	PayEvery int
	// Expiry: the case runs a short pay timeout. The audit first waits
	// until every unpaid order expired and every give-back was done.
	Expiry bool
	// Room: the voucher has a waiting room; every buyer joins, polls and
	// buys with the admission token (or without one when not admitted).
	Room bool

	plan    func(s *suite, e *caseEnv, p *loadPlan) // nil: every user, round robin
	fault   func(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error
	metrics func(e *caseEnv, r *CaseResult) error // more figures from the live instances
	judge   func(j judgement)
}

// judgement is what a case's judge sees.
type judgement struct {
	s     *suite
	e     *caseEnv
	l     *loadRun
	shots []shot
	cl    classification
	r     *CaseResult
}

// markAt is the moment named name of the load (ok false when the fault
// never reached it).
func (j judgement) markAt(name string) (time.Duration, bool) {
	at, ok := j.l.marks[name]
	return at, ok
}

// faultCases are the suite's cases, in run order.
var faultCases = []faultCase{
	{
		Name: "app-kill-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 35, KillsInstance: true,
		Fault:  "instance 2 of 2 killed (SIGKILL) mid-load and taken out of the rotation",
		Expect: "nothing oversold; every 200's order in the database; no 500",
		fault:  killInstance,
		judge:  judgeAppKill,
	},
	{
		Name: "app-kill-async", LockMode: "lua", OrderMode: "async", FaultPct: 35, KillsInstance: true,
		Env:    []string{"SECKILL_CLAIM_IDLE=8s", "SECKILL_DEV_CONSUMER_DELAY=400ms"},
		Fault:  "instance 2 of 2 killed (SIGKILL) mid-load while its consumer holds entries (a 400 ms consumer delay); the survivor claims them after SECKILL_CLAIM_IDLE=8s",
		Expect: "nothing oversold; every 200's order in the database once the stream drained; invariants 1-5",
		fault:  killInstance,
		judge:  judgeAppKill,
	},
	{
		Name: "redis-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 25,
		Fault:  "Redis killed (SIGKILL) mid-load, restarted empty after 10% more of the load",
		Expect: "503 while Redis is down, never 500; sells again once it is back; nothing oversold; every 200's order in the database; never two orders for a user (lost locks may send duplicates to the unique key: counted)",
		fault:  redisRestart,
		judge:  judgeRedisSync,
	},
	{
		Name: "redis-async", LockMode: "lua", OrderMode: "async", FaultPct: 25,
		Env:    []string{"SECKILL_DEV_CONSUMER_DELAY=300ms"},
		Fault:  "Redis killed (SIGKILL) mid-load while orders wait in the stream (a 300 ms consumer delay), restarted empty after 10% more of the load; if the voucher is not back on sale FAULTS_AUTO_WAIT later, an operator's `seckill rebuild --voucher N` (FAULTS_REBUILD=if-needed)",
		Expect: "never oversold; the voucher sells again (the unavailable window, the time from the restart to the first 200 and who recovered it measured); every order announced with 200 before the crash is written or reported failed to its owner",
		fault:  redisRestart,
		judge:  judgeRedisAsync,
	},
	{
		Name: "sentinel-async", LockMode: "lua", OrderMode: "async", FaultPct: 35, Sentinel: true,
		Fault:  "the Sentinel-managed primary killed (SIGKILL) mid-load; the Sentinels promote the replica",
		Expect: "never oversold; sells again after the failover; no 500; admissions acknowledged (200) and lost with the primary are measured and reported, not failed",
		fault:  sentinelFailover,
		judge:  judgeSentinel,
	},
	{
		Name: "sentinel-lag-async", LockMode: "lua", OrderMode: "async", FaultPct: 35, Sentinel: true, ReplicaLag: true,
		Fault:  "the replica stops applying what it receives (CLIENT PAUSE WRITE) for 5% of the load, then the primary is killed (SIGKILL) and the replica, unpaused once its link is down, promoted: the admissions it never applied are gone",
		Expect: "never oversold; sells again after the failover; no 500; the 200s lost with the primary measured: reported failed to their owners, or lost (reported, not failed)",
		fault:  sentinelFailover,
		judge:  judgeSentinel,
	},
	{
		Name: "cluster-async", LockMode: "lua", OrderMode: "async", FaultPct: 35, Cluster: true,
		Env:    []string{"SECKILL_STOCK_BUCKETS=4"},
		Fault:  "a Redis Cluster of three masters with a replica each; the voucher's stock in 4 buckets (on 4 slots); the master of the voucher's bucket 0 killed (SIGKILL) mid-load; the cluster promotes its replica",
		Expect: "never oversold; sells again after the promotion; no 500; admissions acknowledged (200) and lost with the master measured: reported failed to their owners, or lost (reported, not failed)",
		fault:  clusterFailover,
		judge:  judgeSentinel,
	},
	{
		Name: "mariadb-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 30,
		Fault:  "MariaDB killed (SIGKILL) mid-load, restarted on its datadir after 15% more of the load",
		Expect: "503 during the outage, never 500; sells again once it is back; nothing lost; no order whose buyer was told a failure",
		fault:  mariadbRestart,
		judge:  judgeMariaDB,
	},
	{
		Name: "mariadb-async", LockMode: "lua", OrderMode: "async", FaultPct: 30,
		Fault:  "MariaDB killed (SIGKILL) mid-load, restarted on its datadir after 15% more of the load; the consumers retry",
		Expect: "never 500; every 200's order written once MariaDB is back and the stream drained; no order whose buyer was told a failure; invariants 1-5",
		fault:  mariadbRestart,
		judge:  judgeMariaDB,
	},
	{
		Name: "expiry-kill-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 45, KillsInstance: true, Expiry: true, PayEvery: 4,
		Env:    []string{"SECKILL_PAY_TIMEOUT=3s"},
		Fault:  "pay timeout 3 s, a buyer in 4 pays, the others walk away; instance 2 of 2 killed (SIGKILL) once its sweepers are expiring orders, and taken out of the rotation",
		Expect: "the survivor expires the rest: stock + unpaid + paid = initial; nothing unpaid or due at the end; no unit given back twice, no paid order cancelled (invariant 6); nothing oversold or lost",
		fault:  expiryKill,
		judge:  judgeExpiry,
	},
	{
		Name: "expiry-mariadb-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 45, Expiry: true, PayEvery: 4,
		Env:    []string{"SECKILL_PAY_TIMEOUT=3s"},
		Fault:  "pay timeout 3 s, a buyer in 4 pays, the others walk away; MariaDB killed (SIGKILL) once orders are expiring, restarted on its datadir after 15% more of the load",
		Expect: "never 500; the sweepers resume: stock + unpaid + paid = initial; nothing unpaid or due at the end; no unit given back twice, no paid order cancelled; nothing oversold or lost",
		fault:  expiryMariaDB,
		judge:  judgeExpiry,
	},
	{
		Name: "expiry-redis-async", LockMode: "lua", OrderMode: "async", FaultPct: 45, Expiry: true, PayEvery: 4,
		Env:    []string{"SECKILL_PAY_TIMEOUT=3s"},
		Fault:  "pay timeout 3 s, a buyer in 4 pays, the others walk away; Redis killed (SIGKILL) once orders are expiring, restarted empty after 10% more of the load; the voucher rebuilt (automatically, else by an operator)",
		Expect: "every unit back exactly once: Redis stock + unpaid + paid + pending = initial (invariant 5), Redis stock = database stock, database stock + unpaid + paid = initial; no paid order cancelled; nothing unpaid or due at the end; nothing oversold or lost",
		fault:  expiryRedis,
		judge:  judgeExpiry,
	},
	{
		Name: "room-kill-sync", LockMode: "lua", OrderMode: "sync", FaultPct: 25, KillsInstance: true, Room: true,
		Env:    []string{"SECKILL_WAITING_ROOM_TOKEN_TTL=10s"},
		Fault:  "a voucher with a waiting room (admission TTL 10 s): each user first fires a purchase without joining, then twice joins, polls (at most every 200 ms) and buys with the token, or without one once the room answered sold_out or closed; instance 2 of 2 killed (SIGKILL) mid-sale and taken out of the rotation (a purchase with a token cut by the kill is sent again once)",
		Expect: "nothing oversold; every 200's order in the database; no 500; no purchase without a token served (403 NOT_ADMITTED); every buyer told the outcome by the room; the room in Redis after the kill (its hash; joined at least everyone it admitted; sold_out) and the survivor selling on",
		fault:  roomKill,
		judge:  judgeRoom,
	},
	{
		Name: "room-kill-cluster-async", LockMode: "lua", OrderMode: "async", FaultPct: 25, KillsInstance: true, Room: true, Cluster: true,
		Env:    []string{"SECKILL_WAITING_ROOM_TOKEN_TTL=10s", "SECKILL_STOCK_BUCKETS=4"},
		Fault:  "as room-kill-sync, in async mode on a Redis Cluster of three masters with a replica each, the voucher's stock in 4 buckets",
		Expect: "as room-kill-sync, every 200's order in the database once the stream drained",
		fault:  roomKill,
		judge:  judgeRoom,
	},
	{
		Name: "fence-on", LockMode: "lua", OrderMode: "sync", FaultPct: 20,
		Env:     []string{"SECKILL_FENCING=on", "SECKILL_LOCK_TTL=2s", "SECKILL_DEV_CRITICAL_DELAY=1500ms", "SECKILL_REQUEST_TIMEOUT=20s"},
		Fault:   "4 users buy on instance 1, which is frozen (SIGSTOP) inside the critical section (1.5 s delay) until their 2 s leases expire; instance 2 serves the same users; then SIGCONT (load of the other users on instance 2)",
		Expect:  "fencing on: every late write of instance 1 refused as stale (4 stale fences), one order per user, the second holder's",
		plan:    fencePlan,
		fault:   freezeHolder,
		metrics: holderMetrics,
		judge:   judgeFence,
	},
	{
		Name: "fence-off", LockMode: "lua", OrderMode: "sync", FaultPct: 20, Weak: true,
		Env:     []string{"SECKILL_FENCING=off", "SECKILL_LOCK_TTL=2s", "SECKILL_DEV_CRITICAL_DELAY=1500ms", "SECKILL_REQUEST_TIMEOUT=20s"},
		Fault:   "as fence-on, with fencing off",
		Expect:  "the weak case, shown: the frozen holder's late writes go through to the order transaction (two holders past the lock); only the transaction's check or the unique key stops a second order; one order per user",
		plan:    fencePlan,
		fault:   freezeHolder,
		metrics: holderMetrics,
		judge:   judgeFence,
	},
	{
		Name: "redlock-redsync", LockMode: "redsync", OrderMode: "sync", FaultPct: 30, Redlock: true,
		Fault:  "Redlock node 1 of 3 killed (SIGKILL) mid-load, restarted empty after 20% more of the load",
		Expect: "redsync keeps granting (200s while the node is down); no duplicate past the lock (unique-key rejections 0, one order per user)",
		fault:  redlockNode,
		judge:  judgeRedlock,
	},
	{
		Name: "redlock-multi", LockMode: "multi", OrderMode: "sync", FaultPct: 30, Redlock: true,
		Fault:  "Redlock node 1 of 3 killed (SIGKILL) mid-load, restarted empty after 20% more of the load",
		Expect: "multi refuses with 503 while the node is down (no 200 then), sells again once it is back; no duplicate past the lock (unique-key rejections 0, one order per user)",
		fault:  redlockNode,
		judge:  judgeRedlock,
	},
}
