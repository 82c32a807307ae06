package faults

import (
	"context"
	"fmt"
	"time"

	"seckill/model"
	"seckill/testkit/audit"
	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// audit waits for the outcome; in async mode, for the stream to drain. It
// reads the metrics of the live instances. It reads the owners' view of the
// 200s whose orders are not written. Then it stops the instances, reads the
// database and Redis, and judges.
func (s *suite) audit(ctx context.Context, c faultCase, e *caseEnv, l *loadRun, shots []shot, r *CaseResult) error {
	if c.OrderMode == "async" {
		t0 := time.Now()
		err := proc.WaitFor(ctx, "the order stream drains", s.DrainLimit, 100*time.Millisecond, nil, func() bool {
			n, err := streamLen(ctx, e.rdb)
			return err == nil && n == 0
		})
		if err != nil {
			n, _ := streamLen(ctx, e.rdb)
			r.Notes = append(r.Notes, fmt.Sprintf("the stream did not drain within %s: %d entries left", s.DrainLimit, n))
		} else {
			r.addMeasure("drained", "%.1fs after the load", time.Since(t0).Seconds())
		}
	}
	if c.Expiry {
		s.settleExpiry(ctx, e, r)
	}
	var live []string
	for i, in := range e.ins {
		if !e.killed[i] {
			live = append(live, in.URL)
		}
	}
	metrics, err := testbed.ScrapeMetrics(live)
	if err != nil {
		return err
	}
	r.UniqueKey = testbed.MetricSum(metrics, "seckill_unique_key_rejections_total", "")
	r.LockRefused = testbed.MetricSum(metrics, "seckill_lock_not_obtained_total", "")
	r.StaleFence = testbed.MetricSum(metrics, "seckill_stale_fence_rejections_total", "")
	r.Claimed = testbed.MetricSum(metrics, "seckill_async_claimed_total", "")
	if c.metrics != nil {
		if err := c.metrics(e, r); err != nil {
			return err
		}
	}

	// The owners' view of the 200s not in the database (async: failed
	// or pending), asked while the instances run.
	facts, err := audit.ReadDB(ctx, s.sqlDB, e.voucher)
	if err != nil {
		return err
	}
	states := map[int64]string{}
	if c.OrderMode == "async" && len(live) > 0 {
		for _, sh := range shots {
			if sh.Code != "OK" {
				continue
			}
			if _, ok := facts.Orders[sh.OrderID]; ok {
				continue
			}
			st, err := s.api.orderStatus(ctx, live[0], s.users[sh.User].Token, sh.OrderID)
			if err != nil {
				st = "unknown: " + err.Error()
			}
			states[sh.OrderID] = st
		}
	}
	testbed.StopInstances(e.ins)

	// The final facts, from the database and Redis directly.
	if facts, err = audit.ReadDB(ctx, s.sqlDB, e.voucher); err != nil {
		return err
	}
	cl := classify(shots, s.users, facts.Orders, states)
	facts.Announced, facts.CheckAnnounced = cl.Announced, true
	if c.OrderMode == "async" {
		a, err := audit.ReadRedis(ctx, e.rdb, e.voucher)
		if err != nil {
			r.Violations = append(r.Violations, model.Violation{Invariant: 5, Msg: err.Error()})
		} else {
			pending, err := streamLen(ctx, e.rdb)
			if err != nil {
				return fmt.Errorf("read the stream's length: %w", err)
			}
			a.Pending = pending
			facts.Async = a
		}
	}
	r.Violations = append(facts.Violations(), r.Violations...)
	cnt := facts.Counts()
	r.Requests = len(shots)
	r.Status, r.Codes = tallyShots(shots)
	r.InitialStock, r.StockLeft, r.Orders = cnt.InitialStock, cnt.Stock, cnt.Orders
	r.Oversold = cnt.Oversold() || cnt.Stock < 0
	r.Written, r.ReportedFailed = len(cl.Written), len(cl.Failed)
	r.Lost = len(cl.Lost) + len(cl.Pending)
	r.Ambiguous, r.NoAnnounce = len(cl.Ambiguous), len(cl.NoAnnounce)
	if len(cl.Pending) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d order(s) answered 200 still pending at the end (counted lost)", len(cl.Pending)))
	}
	if r.Ambiguous > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d order(s) whose buyer's request ended in a transport error are in the database (the client cannot know: counted as announced)", r.Ambiguous))
	}
	if len(cl.NoAnnounce) > 0 {
		r.Notes = append(r.Notes, "orders no 200 announced: "+idsText(cl.NoAnnounce))
	}
	if len(cl.Lost) > 0 {
		r.Notes = append(r.Notes, "lost 200s: "+idsText(cl.Lost))
	}
	r.Consistent = len(r.Violations) == 0
	r.transportOK = c.KillsInstance
	c.judge(judgement{s: s, e: e, l: l, shots: shots, cl: cl, r: r})
	return nil
}
