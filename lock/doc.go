// Package lock is a family of distributed locks behind one interface, one
// backend per design discussed in the classic write-ups, from no lock at all
// to ZooKeeper. The seckill service takes lock:order:<userId> with the
// backend named by SECKILL_LOCK_MODE (see New and Modes); the load tests show
// which backends hold and which break.
//
// Every backend implements Locker: Obtain(ctx, key) returns a Lock or
// ErrNotObtained (when ctx ends during a wait, an error matching both
// ErrNotObtained and ctx.Err()); Lock.Release returns ErrNotHeld when the
// holder no longer owns the lock. Options (TTL, Wait, Watchdog, backoff) are
// shared; their defaults sit in DefaultOptions. Waiting backends retry with
// exponential backoff and full jitter and honour the context. Owner tokens
// come from crypto/rand. The Lua scripts live in seckill/lua, the only
// package of the module this one imports.
//
// # The family
//
// Round trips are per uncontended acquire plus release.
//
//	mode       guarantee                        failure mode                             round trips   token
//	none       nothing                          every request enters                     0             no
//	local      one holder per process           none across processes: each instance     0             no
//	                                            has its own map; no lease
//	simple     one holder while leases hold     A's lease lapses, B obtains, A's DEL     2             no
//	                                            deletes B's lock, C gets in beside B
//	owner      as simple, but deletes only      lease lapses between GET and DEL:        3             no
//	           its own lock, mostly             the DEL removes the next holder's lock
//	lua        one holder while leases hold;    a holder paused past its lease runs      2             yes
//	           release never touches another's  beside the next (the token stops it)
//	reentrant  lua's, plus re-entry, watchdog,  a holder paused past its lease with      2, +1 per     yes
//	           pub/sub wake-up of waiters       the watchdog off, or cut off from Redis  renewal
//	redsync    a majority of N independent      clock drift, pauses past the lease       2 to N nodes  no
//	           nodes                            (Kleppmann's critique); no token         in parallel
//	multi      all N nodes                      any node down refuses every lock         3: node 0,    yes
//	                                                                                     then the rest
//	                                                                                     in parallel;
//	                                                                                     release to all
//	mysql      one holder per server session    a live but stuck holder keeps it         2             no
//	                                            forever; a connection per held lock
//	zookeeper  one holder, FIFO waiters         session expiry while the holder          4             yes
//	                                            still works (pause past the timeout)
//
// When to use which: none and local only as baselines (local is right for a
// single instance, wrong for the two behind the load balancer); simple and
// owner never, they are here to be seen failing; lua for a short critical
// section with a lease comfortably longer than it, and the fencing token
// checked where it matters; reentrant when the same owner nests or the work
// can outlast a lease (the watchdog) and waiters should queue without
// polling; redsync when one Redis node's loss must not stop locking; multi
// when losing any node's key must not let a second holder in; mysql when
// the lock and the protected rows should live in one system, at the price of
// a connection per holder; zookeeper for fairness and a session-bound
// lock, at the price of a ZooKeeper ensemble.
//
// # Batches
//
// ObtainAll and ReleaseAll take and give back the locks of many keys at
// once, with Obtain's result per key: in one round trip (one script call)
// when the backend is a BatchLocker (lua, without a wait and off Redis
// Cluster; with WaitReplicas the one script call is followed by one WAIT);
// lua on Redis Cluster runs one script call per master, its keys in ARGV
// (one per key, pipelined, when that fails); otherwise one Obtain or
// Release per key, in parallel. The async
// consumer takes the per-user locks of a batch this way. Every key keeps its
// own owner token and fencing token; a key held by someone else is refused
// alone; an error (even one in the middle of the script) leaves no key of
// the batch held.
//
// # Fencing tokens
//
// A lease can always lapse while its holder is paused (GC, network, a slow
// transaction), and then two holders exist. A fencing token, strictly
// greater for every later grant, lets the protected resource refuse the
// stale holder's write. It must come from the same atomic step that grants
// the lock:
//
//   - lua and reentrant INCR <key>:fence inside the acquire script; the
//     counter never expires. Re-entries carry the first grant's token.
//   - multi returns the largest per-node counter its grant bumped; every
//     node moved forward for each new holder.
//   - zookeeper returns the czxid of the holder's znode: zxids are one total
//     order assigned by the leader.
//
// The others cannot: none and local have no shared store to count in;
// simple and owner grant with a bare SET NX, and an INCR sent after it is a
// second command, so a stale holder's late INCR could out-number the new
// holder's (and MULTI cannot make the INCR depend on the SET winning);
// redsync's nodes are independent by design and their counters disagree;
// mysql's GET_LOCK has no counter at all.
//
// # Failures demonstrated
//
// Each weak design's failure is reproduced, not described:
//
//   - simple: TestSimpleDeletesAnotherHoldersLock (two holders), against
//     TestLuaKeepsAnotherHoldersLock.
//   - owner: TestOwnerCheckThenDeleteRace (a pause injected between the GET
//     and the DEL).
//   - local: TestContract/local/TwoLockersExclude (two lockers, standing
//     for two processes, both grant the same key).
//   - none: TestContract/none/OneWinner (every contender wins).
//   - leases in general: TestFencingTokensIncreaseAcrossHolders (the stale
//     holder's write refused by its token).
//   - reentrant: TestReentrantCount, TestWatchdogKeepsLockPastLeases,
//     TestWatchdogStopsAfterRelease, TestWatchdogStopsOnContextEnd,
//     TestReentrantWaiterWokenByPubSub.
//   - redsync: TestRedsyncGrantsWithOneOfThreeDown,
//     TestRedsyncRefusesWithTwoOfThreeDown, TestRedsyncSplitVote.
//   - multi: TestMultiRefusesWithAnyNodeDown, TestMultiLeavesNoPartialGrant.
//   - mysql: TestMySQLReleasedOnDisconnect,
//     TestMySQLCancelledWaiterLeavesNoGhost.
//   - zookeeper: TestZookeeperWaitersFIFO, TestZookeeperGiveUpLeavesQueue,
//     TestZookeeperSessionDeathFrees.
//   - a Redis primary failover (TestFailoverTwoHolders, `make failover`):
//     holder A is granted the lock while the replica applies nothing (CLIENT
//     PAUSE WRITE), the primary is killed, Sentinel promotes the replica and
//     holder B is granted the same key: two holders with simple, owner, lua
//     and reentrant; one with lua and reentrant under WithWaitReplicas(1),
//     with redsync and multi (one of three nodes lost and restarted empty),
//     and with mysql and zookeeper (the lock is not in Redis).
//
// TestContract runs the shared contract (one winner among 120, mutual
// exclusion under 120 waiters, a dead holder freed after its lease, ErrNotHeld,
// cancellation of a wait, monotonic tokens) against every backend, and
// BenchmarkAcquireRelease measures each one's acquire+release latency.
package lock
