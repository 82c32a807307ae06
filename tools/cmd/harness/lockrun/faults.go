package lockrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/testkit/redisproc"
	"seckill/tools/internal/lockcheck"
)

// fault waits for the warm-up, applies the row's fault to process 0, and
// waits for the tail.
func (e *lcEnv) fault(ctx context.Context, r Row, p *lcProc) error {
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.sup.Exited():
			return errors.New("client process 0 exited early")
		case <-time.After(d):
			return nil
		}
	}
	if err := sleep(lcWarmup); err != nil {
		return err
	}
	n := lcFaultLen(r.Mode)
	var err error
	switch r.Fault {
	case "none":
		err = sleep(n)
	case "pause":
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(n):
		}
		if cerr := p.sup.Signal(syscall.SIGCONT); cerr != nil {
			return cerr
		}
	case "partition-lock", "partition-db":
		links := p.lockLink
		if r.Fault == "partition-db" {
			links = p.dbLink
		}
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		for _, l := range links {
			l.Partition()
		}
		if err = p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		err = sleep(n)
		for _, l := range links {
			l.Heal()
		}
	case "cut-lock":
		// A reset of the holder's connections to the lock service: a
		// GET_LOCK session ends with its connection. A Redis or ZooKeeper
		// client reconnects.
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		for _, l := range p.lockLink {
			l.Cut()
		}
		if err = p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		err = sleep(n)
	case "redlock-restart":
		// One Redlock node of three restarted empty while a holder of
		// process 0 holds its lock on all three.
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		node := e.redlock[1]
		if err = node.Kill(); err == nil {
			err = node.Restart(ctx, "")
		}
		if cerr := p.sup.Signal(syscall.SIGCONT); err == nil {
			err = cerr
		}
		if err == nil {
			err = sleep(n)
		}
	case "failover":
		err = e.failover(ctx, p)
		if err == nil {
			err = sleep(lcTail)
		}
	case "latency":
		// Mostly small delays, and now and then one past half a lease.
		for _, l := range p.links() {
			l.SetDelay(func() time.Duration {
				if mrand.IntN(10) == 0 {
					return lcTTL/2 + time.Duration(mrand.Int64N(int64(lcTTL)))
				}
				return time.Duration(mrand.Int64N(int64(20 * time.Millisecond)))
			})
		}
		err = sleep(n)
		for _, l := range p.links() {
			l.SetDelay(nil)
		}
	default:
		return fmt.Errorf("unknown fault %q (want one of %s)", r.Fault, strings.Join(lcFaults, ", "))
	}
	if err != nil {
		return err
	}
	return sleep(lcTail)
}

// failover loses a grant in a Sentinel failover, under a live holder. The
// replica stops applying the replication stream (CLIENT PAUSE WRITE). A
// process-0 client obtains a lock and is stopped holding it. The primary is
// killed. The replica drops the unapplied grant with its link and is
// promoted. Once process 1 works on the new primary, the holder resumes.
func (e *lcEnv) failover(ctx context.Context, p *lcProc) error {
	primary, replica, err := e.set.PrimaryAndReplica(ctx)
	if err != nil {
		return err
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if err := rc.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		return fmt.Errorf("CLIENT PAUSE WRITE on the replica: %w", err)
	}
	time.Sleep(100 * time.Millisecond) // grants from here on stay unapplied
	if err := e.stopHolding(ctx, p); err != nil {
		return err
	}
	if err := primary.Kill(); err != nil {
		return err
	}
	if err := waitLinkDown(ctx, replica); err != nil {
		return err
	}
	if err := rc.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		return fmt.Errorf("CLIENT UNPAUSE on the replica: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.set.WaitPrimary(wctx, replica); err != nil {
		return err
	}
	time.Sleep(lcTTL) // process 1 takes locks on the new primary
	return p.sup.Signal(syscall.SIGCONT)
}

// waitLinkDown polls until the replica reports its primary link down.
func waitLinkDown(ctx context.Context, replica *redisproc.Server) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := redisproc.Info(ctx, replica.Addr(), "replication")
		if err == nil && info["master_link_status"] == "down" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s: master link not down (%v)", replica.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopHolding stops process p (SIGSTOP) at a moment one of its clients
// holds a lock, as its history shows: stopped, it records nothing more.
// After a bounded number of tries it leaves p stopped anyway.
func (e *lcEnv) stopHolding(ctx context.Context, p *lcProc) error {
	for try := 0; ; try++ {
		if err := p.sup.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if try >= 100 || holding(p.out) || ctx.Err() != nil {
			return nil
		}
		if err := p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		time.Sleep(time.Duration(5+mrand.IntN(20)) * time.Millisecond)
	}
}

// holding reads the end of a history and reports whether a client's last
// acquire succeeded with no release after it.
func holding(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	const tail = 32 << 10
	off := max(0, st.Size()-tail)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	held := map[int]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		var op lockcheck.Op
		if json.Unmarshal([]byte(line), &op) != nil {
			continue // the first line may be cut
		}
		switch {
		case op.Kind == lockcheck.KindAcquire && op.Outcome == lockcheck.OK:
			held[op.Client] = true
		case op.Kind == lockcheck.KindRelease:
			held[op.Client] = false
		}
	}
	for _, h := range held {
		if h {
			return true
		}
	}
	return false
}

// stopAll ends the client processes: SIGCONT and SIGTERM (they finish the
// cycle under way), then SIGKILL after a bound.
func (e *lcEnv) stopAll(procs []*lcProc) {
	for _, p := range procs {
		if p.sup == nil {
			continue
		}
		_ = p.sup.Signal(syscall.SIGCONT) // it may have exited
		_ = p.sup.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if p.sup == nil || p.sup.Exited() == nil {
			continue
		}
		select {
		case <-p.sup.Exited():
		case <-time.After(4*lcOpTimeout + 10*time.Second):
			_ = p.sup.Kill(0)
		}
	}
}
