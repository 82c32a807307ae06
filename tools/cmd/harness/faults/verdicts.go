package faults

import (
	"strconv"
	"strings"
	"time"
)

func judgeAppKill(j judgement) {
	r := j.r
	judgeCommon(r, false)
	r.addMeasure("transport", "%d", r.Codes["TRANSPORT"])
	if r.OrderMode == "async" {
		r.addMeasure("claimed", "%d", r.Claimed)
		if r.measureOf("held by the dead") == "0" {
			r.Notes = append(r.Notes, "the killed instance held no entry at the kill: the claim was not exercised")
		}
	}
}

// sellsAgain says some purchase sent after the moment named from got 200,
// or the voucher sold out before. It fails the case otherwise.
func sellsAgain(j judgement, from string) {
	at, ok := j.markAt(from)
	if !ok {
		j.r.fail("the fault never reached %q", from)
		return
	}
	n := 0
	for _, s := range j.shots {
		if s.Sent >= at && s.Code == "OK" {
			n++
		}
	}
	j.r.addMeasure("200 after", "%d", n)
	if n == 0 && j.r.StockLeft > 0 {
		j.r.fail("no purchase sent after %q got 200, with %d units left", from, j.r.StockLeft)
	}
}

func judgeRedisSync(j judgement) {
	r := j.r
	judgeCommon(r, false)
	r.addMeasure("unique key", "%d", r.UniqueKey)
	sellsAgain(j, "redis restarted")
}

func judgeRedisAsync(j judgement) {
	r := j.r
	judgeCommon(r, false)
	restart, ok := j.markAt("redis restarted")
	if !ok {
		r.fail("redis was not restarted")
		return
	}
	// The unavailable window: the first 503 after the restart to the
	// first 200 of a purchase sent after it.
	first503, ok503 := firstAt(j.shots, func(s shot) bool { return s.Status == 503 && s.Done >= restart })
	first200, ok200 := firstAt(j.shots, func(s shot) bool { return s.Code == "OK" && s.Sent >= restart })
	switch {
	case ok200 && ok503 && first200 > first503:
		r.addMeasure("unavailable", "%.1fs", (first200 - first503).Seconds())
	case ok200:
		r.addMeasure("unavailable", "0s")
	default:
		r.addMeasure("unavailable", "until the end")
	}
	// The time to sell again: the restart to the first 200 of a purchase
	// sent after it (goal ≤ firstSaleGoal; reported, not failed).
	if ok200 {
		r.addMeasure("first 200 after the restart", "%.1fs (goal ≤ %s)", (first200 - restart).Seconds(), firstSaleGoal)
	}
	measureRecovery(j, restart)
	r.addMeasure("503 after restart", "%d", between(j.shots, restart, 1<<62)["503"])
	// The 200s before the crash: written, reported failed, lost.
	kill, _ := j.markAt("redis killed")
	written, failed, lost := 0, 0, 0
	in := func(ids []int64, id int64) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
	for _, s := range j.shots {
		if s.Code != "OK" || s.Done > kill {
			continue
		}
		switch {
		case in(j.cl.Written, s.OrderID):
			written++
		case in(j.cl.Failed, s.OrderID):
			failed++
		default:
			lost++
		}
	}
	r.addMeasure("200s before the crash", "%d written, %d reported failed, %d lost", written, failed, lost)
	if !ok200 && r.StockLeft > 0 {
		r.fail("the voucher never sold again after the restart (%d units left)", r.StockLeft)
	}
}

func judgeSentinel(j judgement) {
	r := j.r
	judgeCommon(r, true)
	kill, _ := j.markAt("primary killed")
	promoted, ok := j.markAt("replica promoted")
	if ok {
		r.addMeasure("failover", "%.1fs", (promoted - kill).Seconds())
	}
	if paused, ok := j.markAt("replica paused"); ok {
		n := 0
		for _, s := range j.shots {
			if s.Code == "OK" && s.Done >= paused && s.Done <= kill {
				n++
			}
		}
		r.addMeasure("200s while the replica lagged", "%d", n)
	}
	r.addMeasure("acknowledged then lost", "%d", r.Lost)
	r.addMeasure("reported failed", "%d", r.ReportedFailed)
	r.addMeasure("503", "%d", r.Status["503"])
	sellsAgain(j, "replica promoted")
}

func judgeMariaDB(j judgement) {
	r := j.r
	judgeCommon(r, false)
	kill, _ := j.markAt("mariadb killed")
	restart, _ := j.markAt("mariadb restarting")
	back, _ := j.markAt("mariadb back")
	d := between(j.shots, kill, restart)
	r.addMeasure("while down", "200 %d, 503 %d, 500 %d", d["200"], d["503"], d["500"])
	r.addMeasure("down", "%.1fs, back %.1fs after the kill", (restart - kill).Seconds(), (back - kill).Seconds())
	r.addMeasure("orders no 200 announced", "%d", r.NoAnnounce)
	sellsAgain(j, "mariadb back")
}

func judgeFence(j judgement) {
	r := j.r
	judgeCommon(r, false)
	fencing := strings.Contains(strings.Join(j.e.env, " "), "SECKILL_FENCING=on")
	// The probes: the frozen holder's answers and the orders of the probe
	// users.
	holderOK, secondOK := 0, 0
	for _, s := range j.shots {
		if s.Seq >= 0 {
			continue
		}
		if s.Inst == 0 && s.Code == "OK" {
			holderOK++
		}
		if s.Inst == 1 && s.Code == "OK" {
			secondOK++
		}
	}
	r.addMeasure("probes", "%d users: second holder 200 x%d, late holder 200 x%d", fenceProbes, secondOK, holderOK)
	if secondOK != fenceProbes {
		r.fail("the second holder sold %d of %d probe users", secondOK, fenceProbes)
	}
	if fencing {
		if r.StaleFence != fenceProbes {
			r.fail("%d stale fences refused, want %d (every late write of the frozen holder)", r.StaleFence, fenceProbes)
		}
		if holderOK > 0 {
			r.fail("the frozen holder's late write was answered 200 %d time(s)", holderOK)
		}
		return
	}
	past := r.measureOf("late writes past the lock")
	if n, err := strconv.Atoi(strings.Fields(past + " 0")[0]); err == nil && n > 0 {
		r.addMeasure("breach", "shown")
	} else {
		r.addMeasure("breach", "not shown")
		r.Notes = append(r.Notes, "the frozen holder's late writes did not reach the order transaction")
	}
}

func judgeRedlock(j judgement) {
	r := j.r
	judgeCommon(r, false)
	kill, _ := j.markAt("node killed")
	back, _ := j.markAt("node back")
	d := between(j.shots, kill, back)
	r.addMeasure("while down", "200 %d, 409 %d, 503 %d", d["200"], d["409"], d["503"])
	r.addMeasure("unique key", "%d", r.UniqueKey)
	if r.UniqueKey != 0 {
		r.fail("%d duplicate(s) got past the lock to the unique key (a double grant)", r.UniqueKey)
	}
	switch r.LockMode {
	case "redsync":
		if d["200"] == 0 {
			r.fail("redsync granted nothing while one node of three was down")
		}
	case "multi":
		if d["200"] > 0 {
			r.fail("multi granted %d lock(s) while a node was down", d["200"])
		}
		if d["503"] == 0 {
			r.fail("multi answered no 503 while a node was down")
		}
		sellsAgain(j, "node back")
	}
}

// firstSaleGoal is the goal of the time from Redis's restart, empty, to
// the first 200.
const firstSaleGoal = 3 * time.Second

// measureRecovery records how the voucher came back on sale after the
// Redis restart at restart: by itself, by an operator's rebuild, or not.
func measureRecovery(j judgement, restart time.Duration) {
	switch {
	case hasMark(j.l, "back on sale by itself"):
		at, _ := j.markAt("back on sale by itself")
		j.r.addMeasure("recovery", "automatic %.1fs after the restart", (at - restart).Seconds())
	case hasMark(j.l, "back on sale after the rebuild"):
		j.r.addMeasure("recovery", "operator rebuild")
	default:
		j.r.addMeasure("recovery", "none")
	}
}
