package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func (b *bench) profileWanted(name string) bool {
	for _, p := range strings.Fields(b.cfg.Profile) {
		if p == name {
			return true
		}
	}
	return false
}

// measure runs every limit and every run, then the extra profiled runs of
// the missed targets.
func (b *bench) measure() {
	c := b.cfg
	if c.Only == "cluster" {
		b.clusterOnly()
		return
	}
	if run := c.admissionRun(); run != "" {
		// Its CPU profile (wrkRun), kept by saveAdmissionProfiles. And its
		// partner without the drain profiled alike, so that their ratio
		// compares like with like.
		b.cfg.Profile += " " + run + " " + run + "-nodrain"
	}
	b.machine()
	b.logf("machine: %s x %s, %s, %s; load %s", b.info["nproc"], b.info["cpu"], b.info["mem"], b.info["kernel"], b.info["load_before"])

	// ---- limits: redis-benchmark
	b.redisLimits()

	// ---- limit: no-op, and the sold-out path
	b.logf("no-op endpoint and sold-out path (server: sync, lua)")
	b.startServer("sync", "lua", "noop")
	b.wrkRun("noop", "GET", "/debug/noop", "0", "")
	b.checkWrk("noop")
	if b.get("noop", "non2xx3xx") != "0" {
		b.violate("noop", b.get("noop", "non2xx3xx")+" non-2xx responses from the no-op endpoint")
	}
	soldV := b.publish(1)
	b.info["sold_v"] = strconv.FormatInt(soldV, 10)
	status, body, err := b.call("POST", fmt.Sprintf("/voucher-order/seckill/%d", soldV), b.firstUser, nil)
	var first struct {
		Success bool `json:"success"`
	}
	if err != nil || json.Unmarshal(body, &first) != nil || !first.Success {
		b.die("buying the only voucher of %d failed: %d %s", soldV, status, body)
	}
	b.wrkRun("soldout", "POST", fmt.Sprintf("/voucher-order/seckill/%d", soldV), "0", "")
	b.checkWrk("soldout")
	b.audit("soldout", soldV)
	n := b.get("soldout", "received")
	if b.get("soldout", "status_409") != n {
		b.violate("soldout", fmt.Sprintf("%s of %s responses are 409", b.get("soldout", "status_409"), n))
	}
	if b.get("soldout", "code_SOLD_OUT") != n {
		b.violate("soldout", fmt.Sprintf("%s of %s responses are SOLD_OUT", b.get("soldout", "code_SOLD_OUT"), n))
	}
	if b.get("soldout", "non2xx3xx") != b.get("soldout", "requests") {
		b.violate("soldout", fmt.Sprintf("wrk: %s non-2xx of %s requests", b.get("soldout", "non2xx3xx"), b.get("soldout", "requests")))
	}
	if b.get("soldout", "orders") != "1" || b.get("soldout", "stock") != "0" {
		b.violate("soldout", fmt.Sprintf("orders %s, stock %s; want 1 and 0", b.get("soldout", "orders"), b.get("soldout", "stock")))
	}
	b.stopServer()

	// ---- limit: mariadb-slap
	b.logf("mariadb-slap of the order transaction")
	// ids and user ids from UUID_SHORT(): unique, increasing, like the ID worker's.
	b.slapBench("slap", 4, "BEGIN;UPDATE tb_seckill_voucher SET stock=stock-1 WHERE voucher_id=@V@ AND stock>0;INSERT INTO tb_voucher_order (id,user_id,voucher_id,pay_type,status) VALUES (UUID_SHORT(),UUID_SHORT(),@V@,1,1);COMMIT", c.SlapTxns)
	if c.wantAsync() {
		b.logf("mariadb-slap of a single-row order INSERT")
		// As many statements as the transaction's run: 4 rows per transaction.
		b.slapBench("insert", 1, "INSERT INTO tb_voucher_order (id,user_id,voucher_id,pay_type,status) VALUES (UUID_SHORT(),UUID_SHORT(),@V@,1,1)", 4*c.SlapTxns)
	}

	// ---- the seckill, every mode
	for _, om := range c.OrderModes {
		if om == "sync" {
			for i, lm := range c.LockModes {
				b.seckillRun("sync-"+lm, "sync", lm)
				b.rows = append(b.rows, "sync-"+lm)
				if i > 0 {
					continue
				}
				// The course's path beside it: one transaction per order.
				run := "sync-" + lm + "-pertxn"
				b.noteCmd(fmt.Sprintf("# %s: the server started with %s", run, groupCommitOff))
				b.seckillRun(run, "sync", lm, groupCommitOff)
				b.rows = append(b.rows, run)
				// The same purchase on two instances (docs/capacity.md).
				x2 := "sync-" + lm + "-x2"
				b.seckillRunOn(2, x2, "sync", lm)
				b.rows = append(b.rows, x2)
				// The waiting room's join, poll and admitted purchase.
				b.roomRuns(lm)
			}
			continue
		}
		for i, lm := range c.AsyncLockModes {
			name := "async-" + lm
			b.attempt(name, func() { b.asyncRun(name, lm, false) })
			b.rows = append(b.rows, name)
			if i > 0 {
				continue
			}
			// The same admission with the consumers held: the
			// partner of "admission not slowed by the drain".
			// Then the admission script alone at the pipelining
			// depth the server used.
			nd := name + "-nodrain"
			b.attempt(nd, func() { b.asyncNoDrainRun(nd, lm) })
			b.rows = append(b.rows, nd)
			// The same admission with the purchase limits
			// configured but never hit: its cost is its req/s ÷
			// this run's. Then the cost of tracing, in
			// alternated pairs (tracedRuns).
			run := name + "-limits"
			b.noteCmd(fmt.Sprintf("# %s: the server started with %s", run, strings.Join(benchLimits(), " ")))
			b.attempt(run, func() { b.asyncRun(run, lm, false, benchLimits()...) })
			b.rows = append(b.rows, run)
			b.tracedRuns(name, lm)
			// The admission on two instances (docs/capacity.md).
			x2 := name + "-x2"
			b.attempt(x2, func() { b.asyncRunOn(2, x2, lm, false) })
			b.rows = append(b.rows, x2)
			mean := b.get(name, "pipeline_mean")
			if p := admitPName(mean); p != "" {
				b.logf("redis-benchmark of seckill.lua at %s's mean pipelining depth (%s): -P %d", name, mean, pipelineDepth(mean))
				b.admitLimit(p, pipelineDepth(mean))
			} else {
				b.logf("%s: no pipelining depth in the server's /metrics: no admit-P limit", name)
			}
		}
		// The same admission on a Redis with a replica, then on the Redis
		// Cluster by stock buckets.
		b.replicaRun()
		b.clusterRuns()
		// Latency in the first async lock mode, at a quarter of its
		// maximum (k6Rate), the no-op endpoint first at the same rate.
		rate := c.K6Rate
		if rate == "" && len(c.AsyncLockModes) > 0 {
			rate = k6Rate(b.get("async-"+c.AsyncLockModes[0], "rps"))
		}
		if r, _ := strconv.Atoi(rate); r > 0 && len(c.AsyncLockModes) > 0 {
			lm := c.AsyncLockModes[0]
			name := "k6-async-" + lm
			b.attempt(name, func() { b.k6Run(name, lm, r, true) })
			b.k6Runs = append(b.k6Runs, name)
		} else {
			b.logf("no k6 run: no async req/s to take a quarter of and no BENCH_K6_RATE")
		}
	}

	// ---- targets, and a profile when one is missed
	t := b.targets()
	// A missed target gets an extra run (not in the table: profiling costs
	// CPU) with the server's CPU profile, summarised in RESULTS.md.
	if t.T1 != "-" && (!atLeast(t.T1, 0.6) || !atLeast(t.G1, 1.0)) {
		b.cfg.Profile += " profile-sync-lua"
		b.seckillRun("profile-sync-lua", "sync", "lua")
		b.profiled = append(b.profiled, "profile-sync-lua")
	}
	if t.T2 != "-" && !atLeast(t.T2, 0.9) {
		b.cfg.Profile += " profile-soldout"
		b.logf("sold-out path, profiled")
		b.startServer("sync", "lua", "profile-soldout")
		b.wrkRun("profile-soldout", "POST", "/voucher-order/seckill/"+b.info["sold_v"], "0", "")
		b.stopServer()
		b.profiled = append(b.profiled, "profile-soldout")
	}
	if c.wantAsync() && len(c.AsyncLockModes) > 0 {
		alm := c.AsyncLockModes[0]
		ar, kr := "async-"+alm, "k6-async-"+alm
		missed := !atLeast(t.A1, 8) || !atLeast(t.A3, 1) ||
			(t.A2 != "-" && !atLeast(t.A2, 0.4)) || (t.N1 != "-" && !atLeast(t.N1, 0.8))
		if t.A1 != "-" && missed {
			// The admission under wrk, and the drain after it.
			b.cfg.Profile += " profile-" + ar
			b.asyncRun("profile-"+ar, alm, true)
			b.profiled = append(b.profiled, "profile-"+ar)
			if !atLeast(t.A3, 1) {
				b.profiled = append(b.profiled, "profile-"+ar+"-drain")
			}
		}
		if b.get(kr, "p99_us") != "" && !atMost(t.A4, k6P99Ratio) {
			b.cfg.Profile += " profile-" + kr
			r, _ := strconv.Atoi(b.get(kr, "rate"))
			b.k6Run("profile-"+kr, alm, r, false)
			b.profiled = append(b.profiled, "profile-"+kr)
			b.profiledK6 = append(b.profiledK6, "profile-"+kr)
		}
	}
}

// machine reads the machine's description and the versions of the tools.
func (b *bench) machine() {
	in := b.info
	in["start"] = time.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	in["load_before"] = benchLoadAvg()
	for _, line := range strings.Split(benchReadFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(k, "model name") {
			in["cpu"] = v
			break
		}
	}
	in["nproc"] = benchOutput("nproc")
	for _, line := range strings.Split(benchReadFile("/proc/meminfo"), "\n") {
		if strings.HasPrefix(line, "MemTotal") {
			f := strings.Fields(line)
			in["mem"] = fmt.Sprintf("%.1f GiB", figNum0(f[1])/1048576)
		}
	}
	in["kernel"] = benchOutput("uname", "-sr")
	if f := strings.Fields(benchOutput("go", "version")); len(f) >= 3 {
		in["go"] = f[2]
	}
	in["mariadb"] = b.queryString("SELECT VERSION()")
	in["flush"] = b.queryString("SELECT @@innodb_flush_log_at_trx_commit")
	if info, err := b.rdb.Info(b.ctx, "server").Result(); err == nil {
		in["redis"] = infoField(info, "redis_version")
	}
	out, _ := exec.Command("wrk", "-v").CombinedOutput()
	if f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0]); len(f) >= 2 {
		in["wrk"] = f[1]
	}
	if b.k6 != "" {
		if f := strings.Fields(strings.SplitN(benchOutput(b.k6, "version"), "\n", 2)[0]); len(f) >= 2 {
			b.k6ver = f[1]
		}
	}
}

func benchLoadAvg() string {
	f := strings.Fields(benchReadFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// benchLimits are the settings of the -limits run: BENCH_LIMITS when set
// (e.g. one limit alone), else limitsNotHit.
func benchLimits() []string {
	if v := strings.Fields(os.Getenv("BENCH_LIMITS")); len(v) > 0 {
		return v
	}
	return limitsNotHit
}

// attempt runs a run. Another process may freeze its voucher during the run
// (see frozen). Then the attempt is recorded in disturbed, with its
// violations, and the run is repeated once. A repeat disturbed again counts
// as it is.
func (b *bench) attempt(name string, run func()) {
	nv := len(b.violations)
	run()
	if figNum0(b.get(name, "frozen")) <= 0 {
		return
	}
	note := fmt.Sprintf("%s: %s of %s responses 503 UNAVAILABLE (voucher frozen by another process's start-up reconciliation)", name, b.get(name, "frozen"), b.get(name, "received"))
	for _, v := range b.violations[nv:] {
		note += "; " + v
	}
	b.disturbed = append(b.disturbed, note)
	b.violations = b.violations[:nv]
	for _, p := range []string{"server-" + name + ".log", "wrk-" + name + ".txt", "k6-" + name + ".json"} {
		p = filepath.Join(b.cfg.Out, p)
		if _, err := os.Stat(p); err == nil {
			ext := filepath.Ext(p)
			os.Rename(p, strings.TrimSuffix(p, ext)+".disturbed"+ext)
		}
	}
	b.mu.Lock()
	delete(b.runs, name)
	b.mu.Unlock()
	b.logf("repeating %s", name)
	run()
}
