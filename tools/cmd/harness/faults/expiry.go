package faults

import (
	"context"
	"time"

	"seckill/testkit/audit"
	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// The expiry cases: unpaid orders expire during the load (a short pay
// timeout) while an instance, MariaDB or Redis fails.

// waitExpiry waits (up to 20 s) until some order of the voucher expired,
// marks the moment and measures how many had.
func waitExpiry(ctx context.Context, s *suite, e *caseEnv, l *loadRun) {
	var t testbed.ExpiryTally
	err := proc.WaitFor(ctx, "", 20*time.Second, 5*time.Millisecond, nil, func() bool {
		var err error
		t, err = testbed.ReadExpiryTally(ctx, s.sqlDB, e.voucher)
		return err == nil && t.Expired > 0
	})
	if err != nil {
		l.note("no order had expired 20 s after the fault's start: the fault hit before the expiry")
		return
	}
	l.mark("expiry started")
	l.measure("expired at the fault", "%d", t.Expired)
}

// expiryKill kills instance 2 (SIGKILL) once its sweepers are expiring
// orders, and takes it out of the rotation.
func expiryKill(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	waitExpiry(ctx, s, e, l)
	in := e.ins[1]
	in.Proc.Kill(0)
	e.killed[1] = true
	l.takeDown(1)
	l.mark("instance 2 killed")
	return nil
}

// expiryMariaDB kills and restarts MariaDB once orders are expiring.
func expiryMariaDB(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	waitExpiry(ctx, s, e, l)
	return mariadbRestart(ctx, s, e, l)
}

// expiryRedis restarts Redis empty once orders are expiring.
func expiryRedis(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	waitExpiry(ctx, s, e, l)
	return redisRestart(ctx, s, e, l)
}

// settleExpiry waits (up to a minute) until no order is unpaid and no
// give-back is due: the surviving sweepers finished the expiry.
func (s *suite) settleExpiry(ctx context.Context, e *caseEnv, r *CaseResult) {
	t0 := time.Now()
	err := proc.WaitFor(ctx, "", time.Minute, 100*time.Millisecond, nil, func() bool {
		t, err := testbed.ReadExpiryTally(ctx, s.sqlDB, e.voucher)
		return err == nil && t.Unpaid == 0 && t.GivebackDue == 0
	})
	if err != nil {
		r.Notes = append(r.Notes, "unpaid orders or give-backs due were left a minute after the load")
		return
	}
	r.addMeasure("expiry settled", "%.1fs after the load", time.Since(t0).Seconds())
}

// judgeExpiry runs the common checks, then wants every unit accounted for
// once. That is stock + unpaid + paid = initial, with nothing unpaid or due
// at the end. Some orders must have expired. No paid order may be cancelled
// (invariant 6, judged in common).
func judgeExpiry(j judgement) {
	r := j.r
	judgeCommon(r, false)
	t, err := testbed.ReadExpiryTally(context.Background(), j.s.sqlDB, j.e.voucher)
	if err != nil {
		r.fail("read the orders' statuses: %v", err)
		return
	}
	r.addMeasure("orders", "unpaid %d, paid %d, expired %d, cancelled %d", t.Unpaid, t.Paid, t.Expired, t.Cancelled)
	sum := r.StockLeft + t.Unpaid + t.Paid
	r.addMeasure("stock + unpaid + paid", "%d + %d + %d = %d (initial %d)", r.StockLeft, t.Unpaid, t.Paid, sum, r.InitialStock)
	if sum != r.InitialStock {
		r.fail("stock %d + unpaid %d + paid %d = %d != initial %d", r.StockLeft, t.Unpaid, t.Paid, sum, r.InitialStock)
	}
	if all := t.Unpaid + t.Paid + t.Expired + t.Cancelled; all > r.InitialStock {
		r.addMeasure("units sold again", "%d", all-r.InitialStock)
	} else {
		r.addMeasure("units sold again", "0")
	}
	if t.Expired == 0 {
		r.fail("no order expired: the expiry was not exercised")
	}
	if t.Unpaid > 0 || t.GivebackDue > 0 {
		r.fail("%d order(s) still unpaid and %d give-back(s) due after the settle", t.Unpaid, t.GivebackDue)
	}
	if len(j.l.paid) > 0 {
		r.addMeasure("payments", "%s", codesText(j.l.paid))
	}
	for code, n := range j.l.paid {
		if code == "INTERNAL" || code == "OTHER" {
			r.fail("%d payment(s) answered %s", n, code)
		}
	}
	if r.OrderMode == "async" {
		r.addMeasure("200s reported failed", "%d", r.ReportedFailed)
		judgeExpiryRedis(j, t)
	}
	if a := r.measureOf("expired at the fault"); a == "" {
		r.fail("the fault did not hit while orders were expiring")
	}
}

// judgeExpiryRedis: every unit back in Redis exactly once after the
// rebuild, summed over buckets: Redis stock + unpaid + paid + pending =
// initial, with no give-back still owed.
func judgeExpiryRedis(j judgement, t testbed.ExpiryTally) {
	r, ctx := j.r, context.Background()
	back, _ := j.markAt("redis restarted")
	measureRecovery(j, back)
	a, err := audit.ReadRedis(ctx, j.e.rdb, j.e.voucher)
	if err != nil {
		r.fail("read Redis: %v", err)
		return
	}
	pending, err := streamLen(ctx, j.e.rdb)
	if err != nil {
		r.fail("read the stream's length: %v", err)
		return
	}
	sum := a.RedisStock + t.Unpaid + t.Paid + pending
	r.addMeasure("redis stock + unpaid + paid + pending", "%d + %d + %d + %d = %d (initial %d)",
		a.RedisStock, t.Unpaid, t.Paid, pending, sum, r.InitialStock)
	if sum != r.InitialStock {
		r.fail("redis stock %d + unpaid %d + paid %d + pending %d = %d != initial %d",
			a.RedisStock, t.Unpaid, t.Paid, pending, sum, r.InitialStock)
	}
	if a.RedisStock != r.StockLeft {
		r.fail("redis stock %d != database stock %d after the settle", a.RedisStock, r.StockLeft)
	}
}
