package lock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/redisproc"
	"seckill/testkit/testenv"
)

// TestFailoverTwoHolders shows a lock granted by a Redis primary and lost
// in a failover. docs/locks.md describes the scenario and its results.
// With SECKILL_TEST_FAILOVER_TABLE set, the results table is written to that file.

// failoverTTL is every lease. It is far longer than a failover takes. So B
// can only obtain the key because the grant was lost, never because A's
// lease ran out (checked).
const failoverTTL = 2 * time.Minute

// failoverWait bounds each wait of the scenario (a failover, a restart).
const failoverWait = 45 * time.Second

// failoverCase is one row of the demonstration.
type failoverCase struct {
	name  string // the subtest
	mode  string // the table's mode cell
	fault string // the table's fault cell
	// needs names the environment variable the case cannot run without.
	needs string
	// nodes: three independent nodes (redsync, multi) instead of Sentinel.
	nodes bool
	// newLocker builds A's or B's locker: on c (a Sentinel failover client)
	// or, with nodes, on the three node clients.
	newLocker func(t *testing.T, c redis.UniversalClient, nodes []redis.UniversalClient) lock.Locker
	// grantFirst: A obtains with the replica in sync and applying. The
	// replica is paused after the grant, not before.
	grantFirst bool
	// inRedis: A's attempt writes to the Redis primary (all the Redis modes).
	// The scenario then checks that the replica received it but did not apply
	// it before the primary is killed.
	inRedis bool
	// wantA, wantB: whether A and B are expected to obtain the lock.
	wantA, wantB bool
}

// failoverRow is one line of the printed table.
type failoverRow struct {
	subtest, mode, fault string
	aGot, bGot, two      string
	failover             string
	expected, result     string
}

func redisLocker[L lock.Locker](mk func(redis.UniversalClient, ...lock.Option) (L, error), opts ...lock.Option) func(*testing.T, redis.UniversalClient, []redis.UniversalClient) lock.Locker {
	return func(t *testing.T, c redis.UniversalClient, _ []redis.UniversalClient) lock.Locker {
		return must(t)(asLocker(mk)(c, append([]lock.Option{lock.WithTTL(failoverTTL)}, opts...)...))
	}
}

func nodesLocker[L lock.Locker](mk func([]redis.UniversalClient, ...lock.Option) (L, error)) func(*testing.T, redis.UniversalClient, []redis.UniversalClient) lock.Locker {
	return func(t *testing.T, _ redis.UniversalClient, nodes []redis.UniversalClient) lock.Locker {
		return must(t)(asLocker(mk)(nodes, lock.WithTTL(failoverTTL)))
	}
}

// waitOne is the replica-synced acquire of the demonstration: WAIT 1 with
// a timeout generous enough for a loaded machine's healthy replica.
var waitOne = lock.WithWaitReplicas(1, time.Second)

// The table's fault cells. In every Sentinel case the primary is then
// killed, the replica promoted and the old primary restarted empty as its
// replica before B tries.
const (
	pausedBefore = "replica paused before A's grant"
	pausedAfter  = "replica paused after A's grant (acked)"
	notInRedis   = "replica paused before A's grant (the lock is not in Redis)"
	nodeLost     = "node 1 of 3 killed after A's grant, restarted empty"
)

var failoverCases = []failoverCase{
	{name: "simple", mode: "simple", fault: pausedBefore, inRedis: true, wantA: true, wantB: true,
		newLocker: redisLocker(lock.NewSimple)},
	{name: "owner", mode: "owner", fault: pausedBefore, inRedis: true, wantA: true, wantB: true,
		newLocker: redisLocker(lock.NewOwner)},
	{name: "lua", mode: "lua", fault: pausedBefore, inRedis: true, wantA: true, wantB: true,
		newLocker: redisLocker(lock.NewScripted)},
	{name: "reentrant", mode: "reentrant", fault: pausedBefore, inRedis: true, wantA: true, wantB: true,
		newLocker: redisLocker(lock.NewReentrant)},
	{name: "lua_wait1", mode: "lua + WAIT 1", fault: pausedBefore, inRedis: true, wantA: false, wantB: true,
		newLocker: redisLocker(lock.NewScripted, waitOne)},
	{name: "lua_wait1_granted", mode: "lua + WAIT 1", fault: pausedAfter, inRedis: true, grantFirst: true, wantA: true, wantB: false,
		newLocker: redisLocker(lock.NewScripted, waitOne)},
	{name: "reentrant_wait1", mode: "reentrant + WAIT 1", fault: pausedBefore, inRedis: true, wantA: false, wantB: true,
		newLocker: redisLocker(lock.NewReentrant, waitOne)},
	{name: "reentrant_wait1_granted", mode: "reentrant + WAIT 1", fault: pausedAfter, inRedis: true, grantFirst: true, wantA: true, wantB: false,
		newLocker: redisLocker(lock.NewReentrant, waitOne)},
	{name: "redsync", mode: "redsync", fault: nodeLost, nodes: true, wantA: true, wantB: false,
		newLocker: nodesLocker(lock.NewRedsync)},
	{name: "multi", mode: "multi", fault: nodeLost, nodes: true, wantA: true, wantB: false,
		newLocker: nodesLocker(lock.NewMulti)},
	{name: "mysql", mode: "mysql", fault: notInRedis, needs: "SECKILL_MYSQL_DSN", wantA: true, wantB: false,
		newLocker: func(t *testing.T, _ redis.UniversalClient, _ []redis.UniversalClient) lock.Locker {
			return must(t)(lock.NewMySQL(mysqlDB(t))) // a pool of its own: another process
		}},
	{name: "zookeeper", mode: "zookeeper", fault: notInRedis, needs: "SECKILL_ZK_ADDRS", wantA: true, wantB: false,
		newLocker: func(t *testing.T, _ redis.UniversalClient, _ []redis.UniversalClient) lock.Locker {
			return zkLocker(t) // a session of its own: another process
		}},
}

// TestFailoverTwoHolders shows two holders of one lock:order:<userId> across
// a Sentinel failover for simple, owner, lua and reentrant. It fails if they
// stop failing. It shows one holder for lua and reentrant with
// replica-synced acquire, for redsync and multi with one node lost, and for
// mysql and zookeeper.
func TestFailoverTwoHolders(t *testing.T) {
	if err := redisproc.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true requires redis-server and redis-sentinel on PATH: %v", err)
		}
		t.Skipf("redis-server or redis-sentinel not on PATH: %v", err)
	}
	start := time.Now()
	rows := make([]failoverRow, len(failoverCases))
	var mu sync.Mutex
	var version string
	t.Cleanup(func() {
		text := failoverTable(rows, version, time.Since(start))
		t.Log("\n" + text)
		if path := os.Getenv("SECKILL_TEST_FAILOVER_TABLE"); path != "" {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Errorf("write SECKILL_TEST_FAILOVER_TABLE: %v", err)
			}
		}
	})
	// Every Sentinel set starts now, in the background, so that the
	// Sentinels of all cases find each other at the same time rather than
	// case after case.
	pending := make([]*pendingSet, len(failoverCases))
	for i, c := range failoverCases {
		if !c.nodes && (c.needs == "" || os.Getenv(c.needs) != "") {
			pending[i] = startSetAsync(t.TempDir())
		}
	}
	t.Cleanup(func() {
		for _, p := range pending {
			if p == nil {
				continue
			}
			if err := p.close(); err != nil {
				t.Errorf("close a Sentinel set: %v", err)
			}
		}
	})
	for i, c := range failoverCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			row := failoverRow{subtest: t.Name(), mode: c.mode, fault: c.fault,
				aGot: "-", bGot: "-", two: "-", failover: "-", expected: "one holder"}
			if c.wantA && c.wantB {
				row.expected = "two holders (shown failing)"
			}
			t.Cleanup(func() {
				switch {
				case t.Skipped():
					row.result = "skipped"
				case t.Failed():
					row.result = "FAIL"
				default:
					row.result = "pass"
				}
				mu.Lock()
				rows[i] = row
				mu.Unlock()
			})
			if c.needs != "" {
				testenv.Need(t, c.needs)
			}
			var v string
			if c.nodes {
				v = runNodeLoss(t, c, &row)
			} else {
				v = runSentinelFailover(t, c, &row, pending[i])
			}
			mu.Lock()
			version = v
			mu.Unlock()
		})
	}
}

// failoverKey is lock:order:<userId> for a user id no other test uses (the
// mysql and zookeeper cases share their servers with other tests).
func failoverKey() string { return "lock:order:" + strconv.Itoa(900_000_000+rand.IntN(99_999_999)) }

// judge fills the row's outcome and checks it against the case.
func judge(t *testing.T, c failoverCase, row *failoverRow, errA, errB error) {
	t.Helper()
	got := func(err error) string {
		switch {
		case err == nil:
			return "yes"
		case strings.Contains(err.Error(), "replicas acknowledged"):
			return "no (WAIT: 0 of 1 acks, undone)"
		default:
			return "no"
		}
	}
	row.aGot, row.bGot = got(errA), got(errB)
	two := errA == nil && errB == nil
	row.two = map[bool]string{true: "YES", false: "no"}[two]
	t.Logf("A obtained: %s (%v); B obtained: %s (%v); two holders: %s", row.aGot, errA, row.bGot, errB, row.two)
	if (errA == nil) != c.wantA {
		t.Errorf("A obtained: got %s (%v), want %v", row.aGot, errA, c.wantA)
	}
	if (errB == nil) != c.wantB {
		t.Errorf("B obtained: got %s (%v), want %v", row.bGot, errB, c.wantB)
	}
	if want := c.wantA && c.wantB; two != want {
		t.Errorf("two holders: got %v, want %v", two, want)
	}
}

func plainClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func releaseAll(t *testing.T, locks ...lock.Lock) {
	t.Helper()
	for _, l := range locks {
		if l != nil {
			mustRelease(t, l)
		}
	}
}

// bounded is ctx bounded by failoverWait.
func bounded(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls check every 20ms until it returns nil, failing the test
// after failoverWait.
func waitFor(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func redisVersion(t *testing.T, ctx context.Context, c redis.UniversalClient) string {
	t.Helper()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// failoverTable renders the rows as a Markdown table under a line naming
// the run.
func failoverTable(rows []failoverRow, version string, took time.Duration) string {
	host, _ := os.Hostname()
	var b strings.Builder
	fmt.Fprintf(&b, "TestFailoverTwoHolders, %s, Redis %s, %s, %d CPUs, %.1f s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), version, host, runtime.NumCPU(), took.Seconds())
	b.WriteString("| subtest | mode | fault | A obtained | B obtained | two holders | failover | expected | test |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.subtest == "" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.subtest, r.mode, r.fault, r.aGot, r.bGot, r.two, r.failover, r.expected, r.result)
	}
	return b.String()
}
