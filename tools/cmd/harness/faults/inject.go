package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/model"
	"seckill/repository"
	"seckill/repository/redisstore"
	"seckill/testkit/proc"
	"seckill/testkit/redisproc"
	"seckill/tools/cmd/harness/testbed"
)

// killInstance kills instance 2 (SIGKILL) and takes it out of the
// rotation. In async mode it waits up to 2 s for the instance's consumer to
// hold entries read and not yet written. Then the survivor has something to
// claim, and the case measures them.
func killInstance(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	in := e.ins[1]
	pid := "-" + strconv.Itoa(in.Proc.Pid()) + "-"
	async := strings.Contains(strings.Join(e.env, " "), "SECKILL_ORDER_MODE=async")
	var held int64
	if async {
		proc.WaitFor(ctx, "", 2*time.Second, 2*time.Millisecond, nil, func() bool {
			n, err := pendingOf(ctx, e.rdb, pid)
			return err == nil && n >= 1
		})
	}
	in.Proc.Kill(0)
	e.killed[1] = true
	l.takeDown(1)
	l.mark("instance 2 killed")
	if async {
		if n, err := pendingOf(ctx, e.rdb, pid); err == nil {
			held = n
		}
		l.measure("held by the dead", "%d", held)
	}
	return nil
}

// streamLen is the number of entries in every shard's order stream (the
// orders not yet written: a case's private Redis holds its voucher only).
func streamLen(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var n int64
	for i := range redisstore.Shards {
		l, err := rdb.XLen(ctx, redisstore.StreamKey(i)).Result()
		if err != nil {
			return 0, err
		}
		n += l
	}
	return n, nil
}

// pendingOf is the number of stream entries pending at the consumers whose
// name contains part (consumer names are <host>-<pid>-<random>).
func pendingOf(ctx context.Context, rdb redis.UniversalClient, part string) (int64, error) {
	var n int64
	for i := range redisstore.Shards {
		p, err := rdb.XPending(ctx, redisstore.StreamKey(i), redisstore.GroupName).Result()
		if err != nil {
			return 0, err
		}
		for name, c := range p.Consumers {
			if strings.Contains(name, part) {
				n += c
			}
		}
	}
	return n, nil
}

// redisRestart kills the main Redis and lets 10% of the load meet the outage.
// Then it restarts Redis empty. In async mode it waits for the voucher to be
// back on sale. The voucher comes back by itself within FAULTS_AUTO_WAIT.
// Else an operator's `seckill rebuild` brings it back
// (FAULTS_REBUILD=if-needed).
func redisRestart(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	async := strings.Contains(strings.Join(e.env, " "), "SECKILL_ORDER_MODE=async")
	if async {
		if n, err := streamLen(ctx, e.rdb); err == nil {
			l.measure("unwritten at the crash", "%d", n)
		}
	}
	if err := e.redis.Kill(); err != nil {
		return err
	}
	l.mark("redis killed")
	l.waitSent(ctx, len(l.plan.Seq)/10, 20*time.Second)
	if err := e.redis.Restart(ctx, ""); err != nil {
		return err
	}
	l.mark("redis restarted")
	if !async {
		return nil
	}
	onSale := func() bool {
		st, err := e.rdb.HGet(ctx, redisstore.VoucherKey(e.voucher), "state").Result()
		if err != nil || st != model.VoucherStateOK {
			return false
		}
		n, err := e.rdb.Exists(ctx, redisstore.StockKey(e.voucher)).Result()
		return err == nil && n == 1
	}
	if proc.WaitFor(ctx, "", s.AutoWait, 50*time.Millisecond, nil, onSale) == nil {
		l.mark("back on sale by itself")
		return nil
	}
	if s.Rebuild == "never" {
		l.note("not back on sale %s after the restart; FAULTS_REBUILD=never: no operator rebuild", s.AutoWait)
		return nil
	}
	l.mark("operator rebuild")
	logPath := filepath.Join(e.dir, "rebuild.log")
	env := append(append([]string{}, e.env...), "SECKILL_ENV=development")
	if _, err := testbed.RunTool(ctx, time.Minute, logPath, env, s.bin, "rebuild", "--voucher", strconv.FormatInt(e.voucher, 10)); err != nil {
		l.note("seckill rebuild failed: %v: %s", err, proc.Tail(logPath, 2))
		return nil
	}
	if proc.WaitFor(ctx, "", 15*time.Second, 50*time.Millisecond, nil, onSale) == nil {
		l.mark("back on sale after the rebuild")
	}
	return nil
}

func hasMark(l *loadRun, name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.marks[name]
	return ok
}

// sentinelFailover kills the primary and waits until the Sentinels have
// promoted the replica.
func sentinelFailover(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	primary, heir, err := e.sent.PrimaryAndReplica(ctx)
	if err != nil {
		return err
	}
	lag := strings.Contains(l.plan.Tag, "replica-lag")
	var hc *redis.Client
	if lag {
		// Measured on Redis 7.0: a replica under CLIENT PAUSE
		// WRITE keeps what its primary sends unapplied, and loses it when
		// the link drops before the pause is lifted.
		hc = redis.NewClient(&redis.Options{Addr: heir.Addr(), DialTimeout: time.Second, MaxRetries: -1})
		defer hc.Close()
		if err := hc.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
			return fmt.Errorf("pause the replica: %w", err)
		}
		l.mark("replica paused")
		l.waitSent(ctx, len(l.plan.Seq)/20, 10*time.Second)
	}
	if err := primary.Kill(); err != nil {
		return err
	}
	l.mark("primary killed")
	if lag {
		err := proc.WaitFor(ctx, "the replica sees its primary gone", 15*time.Second, 20*time.Millisecond, nil, func() bool {
			info, err := redisproc.Info(ctx, heir.Addr(), "replication")
			return err == nil && info["master_link_status"] == "down"
		})
		if uerr := hc.Do(ctx, "CLIENT", "UNPAUSE").Err(); uerr != nil && err == nil {
			err = fmt.Errorf("unpause the replica: %w", uerr)
		}
		if err != nil {
			return err
		}
		l.mark("replica unpaused")
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.sent.WaitPrimary(wctx, heir); err != nil {
		return err
	}
	l.mark("replica promoted")
	return nil
}

// clusterFailover kills the master of the slot of the voucher's bucket 0
// and waits until the cluster names its replica master of the slot.
func clusterFailover(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	slot := int(repository.Slot(redisstore.StockKey(e.voucher)))
	master, err := e.cluster.MasterOfSlot(ctx, slot)
	if err != nil {
		return err
	}
	if err := master.Kill(); err != nil {
		return err
	}
	l.mark("primary killed")
	l.note("killed %s, the master of slot %d (the voucher's bucket 0)", master.Addr(), slot)
	return proc.WaitFor(ctx, "the cluster promotes a replica", 30*time.Second, 50*time.Millisecond, nil, func() bool {
		m, err := e.cluster.MasterOfSlot(ctx, slot)
		if err == nil && m != master {
			l.mark("replica promoted")
			return true
		}
		return false
	})
}

// mariadbRestart kills MariaDB, lets 10% of the load meet the outage and
// starts it again on its datadir.
func mariadbRestart(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	s.db.Kill()
	l.mark("mariadb killed")
	l.waitSent(ctx, len(l.plan.Seq)*15/100, 20*time.Second)
	l.mark("mariadb restarting")
	if err := s.db.Restart(ctx, 60*time.Second); err != nil {
		return err
	}
	l.mark("mariadb back")
	return nil
}

// fenceProbes is the number of users the frozen holder serves.
const fenceProbes = 4

// fencePlan keeps the first fenceProbes users for the probes and sends
// the load of the others to instance 2 only.
func fencePlan(s *suite, e *caseEnv, p *loadPlan) {
	seq := schedule(len(p.Users)-fenceProbes, s.Dups, s.Seed)
	for i := range seq {
		seq[i] += fenceProbes
	}
	p.Seq, p.Use, p.HoldAt = seq, []int{1}, len(seq)*70/100
}

// freezeHolder: the probe users buy on instance 1. Once it holds their
// locks (inside the critical section) it is frozen (SIGSTOP) until the
// leases expire. Instance 2 serves the same users. Then instance 1 goes
// on (SIGCONT) with its late writes.
func freezeHolder(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	a := e.ins[0]
	first := make(chan shot, fenceProbes)
	for p := 0; p < fenceProbes; p++ {
		go func() { first <- l.probe(ctx, 0, p) }()
	}
	keys := make([]string, fenceProbes)
	for p := range keys {
		keys[p] = lock.OrderKey(s.users[p].ID)
	}
	err := proc.WaitFor(ctx, "instance 1 holds the probes' locks", 10*time.Second, 5*time.Millisecond, nil, func() bool {
		n, err := e.rdb.Exists(ctx, keys...).Result()
		return err == nil && n == fenceProbes
	})
	if err != nil {
		return err
	}
	if err := a.Proc.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	defer a.Proc.Signal(syscall.SIGCONT)
	l.mark("holder frozen")
	if len(first) > 0 {
		return fmt.Errorf("instance 1 answered a probe before it was frozen: its critical section is too short")
	}
	err = proc.WaitFor(ctx, "the frozen holder's leases expire", 15*time.Second, 10*time.Millisecond, nil, func() bool {
		n, err := e.rdb.Exists(ctx, keys...).Result()
		return err == nil && n == 0
	})
	if err != nil {
		return err
	}
	l.mark("leases expired")
	second := make(chan shot, fenceProbes)
	for p := 0; p < fenceProbes; p++ {
		go func() { second <- l.probe(ctx, 1, p) }()
	}
	for p := 0; p < fenceProbes; p++ {
		<-second
	}
	l.mark("second holder done")
	if err := a.Proc.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	l.mark("holder resumed")
	for p := 0; p < fenceProbes; p++ {
		select {
		case <-first:
		case <-time.After(40 * time.Second):
			return fmt.Errorf("instance 1 did not answer its probes after it resumed")
		}
	}
	return nil
}

// holderMetrics reads the frozen holder's own metrics: its stale fences
// and the late writes that went past its lock to the transaction's check.
func holderMetrics(e *caseEnv, r *CaseResult) error {
	m, err := testbed.ScrapeMetrics([]string{e.ins[0].URL})
	if err != nil {
		return err
	}
	stale := testbed.MetricSum(m, "seckill_stale_fence_rejections_total", "")
	dup := testbed.MetricSum(m, "seckill_seckill_outcomes_total", `code="DUPLICATE_ORDER"`)
	refused := testbed.MetricSum(m, "seckill_lock_not_obtained_total", "")
	unique := testbed.MetricSum(m, "seckill_unique_key_rejections_total", "")
	ok := testbed.MetricSum(m, "seckill_seckill_outcomes_total", `code="OK"`)
	r.addMeasure("late writes refused (stale fence)", "%d", stale)
	r.addMeasure("late writes past the lock", "%d (transaction check %d, unique key %d, written %d)", dup-refused-stale+ok, dup-refused-stale-unique, unique, ok)
	return nil
}

// redlockNode kills Redlock node 1, lets 20% of the load meet the outage
// and restarts it empty.
func redlockNode(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	if err := e.redlock[0].Kill(); err != nil {
		return err
	}
	l.mark("node killed")
	l.waitSent(ctx, len(l.plan.Seq)/5, 20*time.Second)
	if err := e.redlock[0].Restart(ctx, ""); err != nil {
		return err
	}
	l.mark("node back")
	return nil
}
