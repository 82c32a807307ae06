package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"seckill/lock"
	"seckill/testkit/testenv"
)

func init() {
	contractBackends = append(contractBackends, backend{
		name: "zookeeper",
		new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
			return sessionLocker{zkLocker(tb, opts...)}
		},
		exclusive: true, sharedAcrossLockers: true, tokens: true,
		// The holder dies with its session: closing it deletes the
		// holder's ephemeral node at once (a crash would after the session
		// timeout).
		kill: func(tb testing.TB, l lock.Lock) {
			h, ok := l.(sessionLock)
			if !ok {
				tb.Fatalf("kill: lock %T is not from a sessionLocker", l)
			}
			if err := h.z.Close(); err != nil {
				tb.Fatalf("close the holder's session: %v", err)
			}
		},
	})
}

// sessionLocker remembers which session (Locker) granted each lock, so
// that the contract's kill can end the holder's session.
type sessionLocker struct{ *lock.Zookeeper }

// sessionLock is a lock with the Locker that holds it.
type sessionLock struct {
	lock.Lock
	z *lock.Zookeeper
}

func (s sessionLocker) Obtain(ctx context.Context, key string) (lock.Lock, error) {
	l, err := s.Zookeeper.Obtain(ctx, key)
	if err != nil {
		return nil, err
	}
	return sessionLock{Lock: l, z: s.Zookeeper}, nil
}

// zkAddrs returns SECKILL_ZK_ADDRS, skipping without it.
func zkAddrs(tb testing.TB) []string {
	tb.Helper()
	return strings.Split(testenv.Need(tb, "SECKILL_ZK_ADDRS"), ",")
}

// zkLocker dials a backend with its own session, closed when the test
// ends.
func zkLocker(tb testing.TB, opts ...lock.Option) *lock.Zookeeper {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	z, err := lock.DialZookeeper(ctx, zkAddrs(tb), nil, opts...)
	if err != nil {
		tb.Fatalf("dial ZooKeeper: %v", err)
	}
	tb.Cleanup(func() {
		if err := z.Close(); err != nil {
			tb.Errorf("close ZooKeeper: %v", err)
		}
	})
	return z
}

// zkQueue returns the nodes queued for key, read on a separate session.
func zkQueue(tb testing.TB, conn *zk.Conn, z *lock.Zookeeper, key string) []string {
	tb.Helper()
	children, _, err := conn.Children(z.QueuePath(key))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		tb.Fatalf("list the queue of %q: %v", key, err)
	}
	return children
}

// zkObserver is a plain client session for looking at the lock queues.
func zkObserver(tb testing.TB) *zk.Conn {
	tb.Helper()
	conn, _, err := zk.Connect(zkAddrs(tb), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZK{}))
	if err != nil {
		tb.Fatalf("connect ZooKeeper: %v", err)
	}
	tb.Cleanup(conn.Close)
	return conn
}

type discardZK struct{}

func (discardZK) Printf(string, ...any) {}

// waitQueueLen polls until key's queue holds n nodes.
func waitQueueLen(tb testing.TB, conn *zk.Conn, z *lock.Zookeeper, key string, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := zkQueue(tb, conn, z, key)
		if len(q) == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("queue of %q: %d nodes %v, want %d", key, len(q), q, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestZookeeperWaitersFIFO: waiters that queue one after another while the
// lock is held get it in the order they queued, each woken by its
// predecessor's release. Waiters alternate between two sessions (two
// processes in effect).
func TestZookeeperWaitersFIFO(t *testing.T) {
	const waiters = 6
	sessions := []*lock.Zookeeper{
		zkLocker(t, lock.WithWait(20*time.Second)),
		zkLocker(t, lock.WithWait(20*time.Second)),
	}
	observer := zkObserver(t)
	ctx := testContext(t, 30*time.Second)
	key := testKey(t)

	holder := obtain(t, sessions[0], ctx, key)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range waiters {
		wg.Go(func() {
			l, err := sessions[i%2].Obtain(ctx, key)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // work while holding
			mustRelease(t, l)
		})
		waitQueueLen(t, observer, sessions[0], key, i+2) // queued behind the holder and the earlier waiters
	}
	mustRelease(t, holder)
	wg.Wait()
	want := make([]int, waiters)
	for i := range want {
		want[i] = i
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("grant order: got %v, want %v (queue order)", order, want)
	}
}

// TestZookeeperGiveUpLeavesQueue: a waiter that gives up deletes its node at
// once, whether its wait elapses or its context ends. So it neither lingers
// in the queue nor blocks the waiter behind it.
func TestZookeeperGiveUpLeavesQueue(t *testing.T) {
	z := zkLocker(t)
	short := zkLocker(t, lock.WithWait(150*time.Millisecond))
	patient := zkLocker(t, lock.WithWait(10*time.Second))
	observer := zkObserver(t)
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)

	holder := obtain(t, z, ctx, key)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := short.Obtain(ctx, key)
		gaveUp <- err
	}()
	waitQueueLen(t, observer, z, key, 2)
	got := make(chan error, 1)
	go func() {
		l, err := patient.Obtain(ctx, key)
		if err == nil {
			mustRelease(t, l)
		}
		got <- err
	}()
	waitQueueLen(t, observer, z, key, 3)

	if err := <-gaveUp; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("short waiter: got %v, want ErrNotObtained", err)
	}
	waitQueueLen(t, observer, z, key, 2) // the holder and the patient waiter
	mustRelease(t, holder)
	if err := <-got; err != nil {
		t.Fatalf("patient waiter behind a waiter that gave up: %v", err)
	}
}

// TestZookeeperSessionDeathFrees: the holder's node is ephemeral, so ending
// its session frees the lock for a waiter already queued, and Release on
// the dead session fails.
func TestZookeeperSessionDeathFrees(t *testing.T) {
	holderSession := zkLocker(t)
	waiter := zkLocker(t, lock.WithWait(10*time.Second))
	observer := zkObserver(t)
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)

	dead := obtain(t, holderSession, ctx, key)
	tok, ok := dead.Token()
	got := make(chan lock.Lock, 1)
	go func() {
		l, err := waiter.Obtain(ctx, key)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
	waitQueueLen(t, observer, holderSession, key, 2)
	if err := holderSession.Close(); err != nil {
		t.Fatalf("close the holder's session: %v", err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	if next, _ := l.Token(); !ok || next <= tok {
		t.Errorf("token after the holder died: got %d, want > %d", next, tok)
	}
	mustRelease(t, l)
	if err := dead.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release on the closed session: got %v, want ErrNotHeld", err)
	}
}

// TestNewBuildsZookeeper: the factory needs Deps.ZKServers, and dialing
// an address where nothing listens gives up when the context ends instead
// of retrying forever.
func TestNewBuildsZookeeper(t *testing.T) {
	if _, err := lock.New("zookeeper", lock.Deps{}); err == nil || !strings.Contains(err.Error(), "ZooKeeper") {
		t.Errorf("New(zookeeper) without servers: got %v, want an error naming ZooKeeper", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if z, err := lock.DialZookeeper(ctx, []string{freeAddr(t)}, nil); err == nil {
		if cerr := z.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
		t.Fatal("DialZookeeper to a closed port: got a session, want an error")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DialZookeeper to a closed port: got %v, want DeadlineExceeded", err)
	}

	lk, err := lock.New("zookeeper", lock.Deps{ZKServers: zkAddrs(t)})
	if err != nil {
		t.Fatalf("New(zookeeper): %v", err)
	}
	t.Cleanup(func() {
		if c, ok := lk.(interface{ Close() error }); !ok {
			t.Error("the zookeeper locker has no Close")
		} else if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	ctx = testContext(t, 10*time.Second)
	mustRelease(t, obtain(t, lk, ctx, testKey(t)))
}
