package lock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/redisproc"
)

// runSentinelFailover runs c's scenario on a private Sentinel set and
// returns the Redis version.
func runSentinelFailover(t *testing.T, c failoverCase, row *failoverRow, p *pendingSet) string {
	ctx := testContext(t, 3*failoverWait)
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, p.dir)
		}
		if err := p.close(); err != nil {
			t.Errorf("close the Sentinel set: %v", err)
		}
	})
	<-p.done
	if p.err != nil {
		t.Fatalf("start the Sentinel set: %v", p.err)
	}
	set := p.set
	if err := set.WaitHealthy(bounded(t, ctx)); err != nil {
		t.Fatal(err)
	}
	primary, replica := set.Servers[0], set.Servers[1]
	primaryClient, replicaClient := plainClient(t, primary.Addr()), plainClient(t, replica.Addr())
	key := failoverKey()

	lkA := c.newLocker(t, failoverClient(t, set), nil)
	var (
		a         lock.Lock
		errA      error
		grantedAt time.Time
	)
	obtainA := func() {
		grantedAt = time.Now()
		a, errA = lkA.Obtain(ctx, key)
		if errA != nil && !errors.Is(errA, lock.ErrNotObtained) {
			t.Fatalf("A's Obtain: %v, want a grant or ErrNotObtained", errA)
		}
	}
	if c.grantFirst {
		obtainA()
		if errA == nil {
			if n, err := replicaClient.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Fatalf("replica after A's replica-synced grant: EXISTS %s got %d, %v, want 1", key, n, err)
			}
		}
	}
	if err := replicaClient.Do(ctx, "CLIENT", "PAUSE", failoverWait.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE WRITE on the replica: %v", err)
	}
	if !c.grantFirst {
		obtainA()
	}
	if c.inRedis && !c.grantFirst {
		waitReceivedNotApplied(t, ctx, primaryClient, replicaClient, key)
	}

	if err := primary.Kill(); err != nil {
		t.Fatalf("kill the primary: %v", err)
	}
	killed := time.Now()
	waitFor(t, ctx, "the replica to report its link to the primary down", func() error {
		info, err := redisproc.Info(ctx, replica.Addr(), "replication")
		if err != nil {
			return err
		}
		if s := info["master_link_status"]; s != "down" {
			return fmt.Errorf("master_link_status %q", s)
		}
		return nil
	})
	if err := replicaClient.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("CLIENT UNPAUSE on the replica: %v", err)
	}
	if err := set.WaitPrimary(bounded(t, ctx), replica); err != nil {
		t.Fatalf("failover: %v", err)
	}
	row.failover = fmt.Sprintf("%.1f s", time.Since(killed).Seconds())
	// The dead primary comes back, empty, as the new primary's replica:
	// the replica-synced modes need one to grant anything.
	if err := primary.Restart(bounded(t, ctx), replica.Addr()); err != nil {
		t.Fatalf("restart the old primary as a replica: %v", err)
	}
	if err := redisproc.WaitReplica(bounded(t, ctx), primary, replica); err != nil {
		t.Fatalf("the old primary back as a replica: %v", err)
	}

	// B: another process, whose failover client asks the Sentinels now.
	lkB := c.newLocker(t, failoverClient(t, set), nil)
	b, errB := lkB.Obtain(ctx, key)
	if errB != nil && !errors.Is(errB, lock.ErrNotObtained) {
		t.Fatalf("B's Obtain after the failover: %v, want a grant or ErrNotObtained", errB)
	}
	if errA == nil && errB == nil && time.Since(grantedAt) >= failoverTTL {
		t.Fatalf("B obtained %v after A, past A's lease %v: not a lost grant", time.Since(grantedAt), failoverTTL)
	}
	judge(t, c, row, errA, errB)
	if c.grantFirst && errA == nil {
		// A still holds its lock on the promoted replica: its release (on
		// its own failover client, which follows the switch) finds it.
		if err := a.Release(bounded(t, ctx)); err != nil {
			t.Errorf("A's Release after the failover: %v, want nil (A still holds)", err)
		}
	}
	if !c.inRedis {
		releaseAll(t, a, b)
	}
	return redisVersion(t, ctx, replicaClient)
}

// pendingSet is a Sentinel set (a primary, a replica, three Sentinels:
// quorum 2, down after 1s, failover timeout 5s) starting in the
// background.
type pendingSet struct {
	dir  string
	done chan struct{} // closed when set or err is there
	set  *redisproc.Set
	err  error
}

func startSetAsync(dir string) *pendingSet {
	p := &pendingSet{dir: dir, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(context.Background(), failoverWait)
		defer cancel()
		p.set, p.err = redisproc.StartSet(ctx, redisproc.SetOptions{Dir: dir, MasterName: "failover",
			Quorum: 2, DownAfter: time.Second, FailoverTimeout: 5 * time.Second})
	}()
	return p
}

// close waits for the start to end and kills every process of the set
// (again: killing is idempotent).
func (p *pendingSet) close() error {
	<-p.done
	if p.set == nil {
		return nil
	}
	return p.set.Close()
}

// waitReceivedNotApplied waits until the paused replica has received all the
// primary wrote but not applied the grant. Received means its applied offset
// plus its link's unapplied input equals the primary's offset. Not applied
// means the key is absent on the replica. The primary must die in that
// state.
func waitReceivedNotApplied(t *testing.T, ctx context.Context, primaryClient, replicaClient *redis.Client, key string) {
	t.Helper()
	waitFor(t, ctx, "the replica to receive A's grant without applying it", func() error {
		primaryInfo, err := redisproc.Info(ctx, primaryClient.Options().Addr, "replication")
		if err != nil {
			return err
		}
		replicaInfo, err := redisproc.Info(ctx, replicaClient.Options().Addr, "replication")
		if err != nil {
			return err
		}
		list, err := replicaClient.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		var unapplied int64 = -1
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " flags=M") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "qbuf="); ok {
					unapplied, _ = strconv.ParseInt(v, 10, 64)
				}
			}
		}
		written, _ := strconv.ParseInt(primaryInfo["master_repl_offset"], 10, 64)
		applied, _ := strconv.ParseInt(replicaInfo["master_repl_offset"], 10, 64)
		if unapplied < 0 {
			return errors.New("no master client on the replica")
		}
		if applied+unapplied < written {
			return fmt.Errorf("replica applied %d + unapplied input %d < primary's %d", applied, unapplied, written)
		}
		if n, err := replicaClient.Exists(ctx, key).Result(); err != nil || n != 0 {
			return fmt.Errorf("the replica applied the grant (EXISTS %d, %v): the pause did not hold it back", n, err)
		}
		return nil
	})
}

// failoverClient is a go-redis Sentinel failover client of set, as an app
// instance has, closed when the test ends.
func failoverClient(t *testing.T, set *redisproc.Set) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: set.MasterName, SentinelAddrs: set.SentinelAddrs()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// logTails logs the end of every process log under dir, for a failed case.
func logTails(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s:\n%s", f, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}
