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

	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/testkit/audit"
	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// audit reads the audit endpoint, the database and, in async mode, Redis. In
// async mode it waits for the queue to drain first. It judges the facts with
// model.Counts, the invariants of docs/contract.md, as the tests do.
func (b seckillRuns) audit(name string, v int64) {
	var a auditResponse
	var raw []byte
	for tries := 0; ; tries++ {
		status, body, err := b.call("GET", fmt.Sprintf("/admin/vouchers/%d/audit", v), b.adminToken, nil)
		if err != nil || status != 200 {
			b.die("audit of voucher %d failed: %d %s %v", v, status, body, err)
		}
		a = auditResponse{}
		if err := json.Unmarshal(body, &a); err != nil {
			b.die("audit of voucher %d: %v: %s", v, err, body)
		}
		raw = body
		if a.Data.Pending == nil || *a.Data.Pending == 0 {
			break
		}
		if tries >= 600 {
			b.violate(name, "async queue not drained after 60 s: "+string(body))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	os.WriteFile(filepath.Join(b.cfg.Out, "audit-"+name+".json"), append(raw, '\n'), 0o644)
	f := b.dbState(v)
	b.put(name, "voucher", strconv.FormatInt(v, 10))
	b.put(name, "initial", strconv.FormatInt(f.Initial, 10))
	b.put(name, "stock", strconv.FormatInt(f.Stock, 10))
	b.put(name, "orders", strconv.FormatInt(f.Orders, 10))
	b.put(name, "distinct", strconv.FormatInt(f.Distinct, 10))
	b.put(name, "duprej", strconv.FormatInt(a.Data.DuplicateRejections, 10))
	b.put(name, "consistent", strconv.FormatBool(a.Data.Consistent))
	if !a.Data.Consistent {
		b.violate(name, "audit endpoint says consistent=false: "+string(raw))
	}
	if a.Data.DuplicateRejections != 0 {
		b.violate(name, fmt.Sprintf("unique-key rejections: %d (the lock let duplicates through)", a.Data.DuplicateRejections))
	}
	if a.Data.Pending != nil {
		// Async mode: invariant 5 from Redis itself too (the endpoint's
		// consistent covers it; this does not trust the endpoint).
		f.Async = true
		f.Pending = *a.Data.Pending
		rc, err := audit.ReadRedis(b.ctx, b.rdb, v)
		if err != nil {
			b.die("audit of voucher %d: %v", v, err)
		}
		f.RedisStock, f.Buyers = rc.RedisStock, *rc.Buyers
		b.put(name, "pending", strconv.FormatInt(f.Pending, 10))
		b.put(name, "redis_stock", strconv.FormatInt(f.RedisStock, 10))
		b.put(name, "buyers", strconv.FormatInt(f.Buyers, 10))
		if f.Pending != 0 {
			b.violate(name, fmt.Sprintf("%d orders still pending after the drain", f.Pending))
		}
	}
	for _, msg := range factsViolations(f) {
		b.violate(name, msg)
	}
}

// factsViolations judges a voucher's facts with model.Counts, the one
// implementation of the invariants.
func factsViolations(f voucherFacts) []string {
	c := model.Counts{InitialStock: f.Initial, Stock: f.Stock, Orders: f.Orders, DistinctUsers: f.Distinct}
	if f.Async {
		buyers := f.Buyers
		c.Async = &model.AsyncCounts{RedisStock: f.RedisStock, Pending: f.Pending, Buyers: &buyers}
	}
	var out []string
	for _, v := range c.Violations() {
		out = append(out, v.String())
	}
	return out
}

// orderChecks runs after a run where every request must create an order. No
// token may be reused; else knob is too low. Every response must be 200. And
// 200s ≤ orders ≤ 200s + unanswered.
func (b seckillRuns) orderChecks(name, knob string) {
	n200 := int64(figNum0(b.get(name, "status_200")))
	received := int64(figNum0(b.get(name, "received")))
	inflight := int64(figNum0(b.get(name, "sent"))) - received
	orders := int64(figNum0(b.get(name, "orders")))
	b.put(name, "inflight", strconv.FormatInt(inflight, 10))
	if b.get(name, "wrapped") != "0" {
		b.violate(name, fmt.Sprintf("%s requests reused a token: raise %s", b.get(name, "wrapped"), knob))
	}
	// A purchase the shedder refused (503, Retry-After, no work done) is
	// the design's answer to a queue longer than SECKILL_SHED_TARGET, not a
	// failure: counted, reported, not a violation.
	shed := min(int64(figNum0(b.get(name, "shed"))), int64(figNum0(b.get(name, "status_503"))+figNum0(b.get(name, "status_5xx"))))
	if shed > 0 {
		b.logf("%s: %d purchases shed (503 with Retry-After, seckill_purchases_shed_total)", name, shed)
	}
	if n200+shed != received {
		b.violate(name, fmt.Sprintf("%d of %d responses are not 200 (every request must create an order; %d shed)", received-n200, received, shed))
	}
	if !(orders >= n200 && orders <= n200+inflight) {
		b.violate(name, fmt.Sprintf("orders %d, 200 responses %d, unanswered at stop %d: want 200s <= orders <= 200s + unanswered", orders, n200, inflight))
	}
}

// seckillRun starts a fresh server and a voucher of ample stock. One wrk run
// follows, where every request is a new user. Then come the audit and the
// checks.
func (b seckillRuns) seckillRun(name, orderMode, lockMode string, env ...string) {
	b.seckillRunOn(1, name, orderMode, lockMode, env...)
}

// seckillRunOn is seckillRun on n instances (1 or 2, startServers).
func (b seckillRuns) seckillRunOn(n int, name, orderMode, lockMode string, env ...string) {
	b.logf("seckill %s %s", name, strings.Join(env, " "))
	b.startServers(n, orderMode, lockMode, name, env...)
	v := b.publish(10000000)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", "")
	b.serverMetrics(name, "")
	b.checkWrk(name)
	b.audit(name, v)
	b.orderChecks(name, "BENCH_USERS")
	b.stopServer()
}

// asyncRun: like seckillRun in async mode, then the drain and the audit with
// invariant 5. With profile, the wrk run and the drain are CPU-profiled (the
// drain profile is <name>-drain).
func (b seckillRuns) asyncRun(name, lockMode string, profile bool, env ...string) {
	b.asyncRunOn(1, name, lockMode, profile, env...)
}

// asyncRunOn is asyncRun on n instances (1 or 2, startServers).
func (b seckillRuns) asyncRunOn(n int, name, lockMode string, profile bool, env ...string) {
	b.logf("seckill %s %s", name, strings.Join(env, " "))
	b.startServers(n, "async", lockMode, name, env...)
	v := b.publish(10000000)
	admission := name == b.cfg.admissionRun()
	if admission {
		b.allocsProfile(name, admissionAllocsBase)
	}
	b.costBegin(name)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", filepath.Join(b.cfg.Out, "tokens-async.csv"))
	if admission {
		b.allocsProfile(name, admissionAllocs)
		b.saveAdmissionProfiles(name)
	}
	if profile {
		secs := int(figNum0(b.get("async-"+lockMode, "drain_secs")) + 0.5)
		b.profileStart(name+"-drain", max(secs, 2), 0)
	}
	b.drain(name, v)
	b.costEnd(name)
	b.profileFinish(name + "-drain")
	b.serverMetrics(name, "")
	b.asyncChecks(name, v)
}

// asyncChecks ends an async run once drained, its server still up. It checks
// the other consumers, wrk's figures, the audit and the orders. Then it stops
// the server and counts the frozen refusals.
func (b seckillRuns) asyncChecks(name string, v int64) {
	b.otherConsumers(name)
	b.checkWrk(name)
	b.audit(name, v)
	b.orderChecks(name, "BENCH_ASYNC_USERS")
	b.stopServer()
	b.frozen(name)
}

// asyncNoDrainRun measures the admission of asyncRun without the drain. It
// uses a fresh voucher and the same wrk run and tokens. Its server's
// consumers do not write during the load. SECKILL_DEV_CONSUMER_DELAY, longer
// than the load, makes each consumer hold the batch it read. The setting is
// for development only; the bench's servers run in SECKILL_ENV=development.
//
// This run is the partner of the admission target "not slowed by the drain".
// Its req/s is the admission without the consumers' work. The load figures
// (latency, pipelining, CPU) are that server's.
//
// Then that server is stopped. SIGTERM does not wait for the pause: the
// consumer's sleep (c.sleep) ends when the consumers stop. The consumer then
// writes its held batch if the batch's deadline has not passed. That deadline
// is its BatchTimeout, 8 s after the read. Otherwise the batch stays pending,
// and the next server claims it. No batch is written twice.
//
// A normal async server then drains the backlog and is audited as in
// asyncRun. Its drain time includes the stop and the start. After a load
// longer than 8 s, it also includes the wait for the held batch. That batch
// holds at most 100 entries. The new server claims it after
// SECKILL_CLAIM_IDLE (default 30 s). So this drain rate is not the consumers'
// speed.
//
// "written_load" is the orders in the database at the end of the load. It is
// 0 unless another process's consumers wrote them.
func (b seckillRuns) asyncNoDrainRun(name, lockMode string) {
	delay := fmt.Sprintf("SECKILL_DEV_CONSUMER_DELAY=%ds", b.cfg.Duration+600)
	b.logf("seckill %s (%s: the consumers hold their first batch)", name, delay)
	b.startServer("async", lockMode, name, delay)
	b.noteCmd(fmt.Sprintf("# %s: the server started with %s; its backlog drained by a normal async server (log server-%s-drain.log)", name, delay, name))
	v := b.publish(10000000)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", filepath.Join(b.cfg.Out, "tokens-async.csv"))
	b.serverMetrics(name, "")
	held := b.dbState(v)
	written := held.Initial - held.Stock
	if written != 0 {
		b.logf("%s: %d orders written during the load although its consumers were held (another process's consumers?)", name, written)
	}
	b.stopServer()
	b.startServer("async", lockMode, name+"-drain")
	b.drain(name, v)
	b.put(name, "written_load", strconv.FormatInt(written, 10))
	// The drain's batches are the second server's.
	drained := b.scrapeMetrics(name+"-drain", "")
	b.put(name, "batch_mean", drained["batch_mean"])
	b.put(name, "batches", drained["batches"])
	b.asyncChecks(name, v)
}

// drain waits, after an async run, for the consumers to write every order. It
// polls the voucher's stock in the database and in Redis every 50 ms. The
// database read is by primary key. Redis holds initial - admitted, the
// database initial - written. So equal stocks mean every admitted order is
// written.
//
// The audit endpoint scans the whole stream, so polling it would slow the
// drain. It is read once the drain is over, and must say pending 0.
//
// Figures: the backlog and the orders written at the first poll. Then the
// seconds from the end of the load until drained. Then the drain rate: orders
// written between the first poll and the last, per second.
func (b seckillRuns) drain(name string, v int64) {
	tEnd := time.Unix(0, int64(figNum0(b.get(name, "t_end"))))
	var initial int64
	if err := b.db.QueryRowContext(b.ctx, "SELECT initial_stock FROM tb_seckill_voucher WHERE voucher_id=?", v).Scan(&initial); err != nil {
		b.die("reading voucher %d: %v", v, err)
	}
	var t0, t1 time.Time
	var n0, ds, rs int64
	for {
		if err := b.db.QueryRowContext(b.ctx, "SELECT stock FROM tb_seckill_voucher WHERE voucher_id=?", v).Scan(&ds); err != nil {
			b.die("reading voucher %d: %v", v, err)
		}
		rs = b.redisStock(v)
		t1 = time.Now()
		if t0.IsZero() {
			t0, n0 = t1, initial-ds
			b.put(name, "backlog", strconv.FormatInt(ds-rs, 10))
			b.put(name, "written_load", strconv.FormatInt(n0, 10))
			b.put(name, "first_poll_ms", fmt.Sprintf("%.0f", float64(t1.Sub(tEnd).Microseconds())/1000))
		}
		if ds <= rs {
			break
		}
		if t1.Sub(tEnd).Seconds() > float64(b.cfg.DrainTimeout) {
			b.violate(name, fmt.Sprintf("not drained %d s after the load: database stock %d, Redis stock %d", b.cfg.DrainTimeout, ds, rs))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ds < rs {
		b.violate(name, fmt.Sprintf("database stock %d below Redis stock %d: more orders written than admitted", ds, rs))
	}
	drained := initial - ds - n0
	b.put(name, "drained", strconv.FormatInt(drained, 10))
	b.put(name, "drain_secs", fmt.Sprintf("%.2f", t1.Sub(tEnd).Seconds()))
	// Kept up (nothing left at the first poll): no drain rate to measure.
	rate := ""
	if d := t1.Sub(t0).Seconds(); drained > 0 && d > 0 {
		rate = fmt.Sprintf("%.0f", float64(drained)/d)
	}
	b.put(name, "drain_rate", rate)
	b.logf("%s: backlog %s at the end of the load, drained in %s s, %s orders/s", name, b.get(name, "backlog"), b.get(name, "drain_secs"), rate)
}

// otherConsumers lists the consumers of group g1 that are not this server's.
// It keeps those that read the stream in the last 5 s. Other processes on
// this Redis, such as async tests, share stream.orders. They take part in the
// drain.
func (b seckillRuns) otherConsumers(name string) {
	host, _ := os.Hostname()
	mine := fmt.Sprintf("%s-%d-", host, b.serverPID())
	second := mine
	if b.second != nil {
		second = fmt.Sprintf("%s-%d-", host, b.second.Proc.Pid())
	}
	others := map[string]bool{}
	for shard := range redisstore.Shards {
		cs, _ := b.rdb.XInfoConsumers(b.ctx, redisstore.StreamKey(shard), redisstore.GroupName).Result()
		for _, c := range cs {
			if !strings.HasPrefix(c.Name, mine) && !strings.HasPrefix(c.Name, second) && c.Idle < 5*time.Second {
				others[c.Name] = true
			}
		}
	}
	b.put(name, "other_consumers", strconv.Itoa(len(others)))
}

// redisStock is the voucher's Redis stock summed over its buckets (0 when
// it cannot be read).
func (b seckillRuns) redisStock(v int64) int64 {
	c, err := audit.ReadRedis(b.ctx, b.rdb, v)
	if err != nil {
		return 0
	}
	return c.RedisStock
}

// serverMetrics reads the server's /metrics, cumulative since its start. Each
// run has its own server. The figures are the route's latency as the server
// saw it, the mean batch size and the mean pipelining depth (promHistogram).
// route defaults to the seckill route.
func (b seckillRuns) serverMetrics(name, route string) {
	b.putAll(name, b.scrapeMetrics(name, route))
}

// scrapeMetrics reads the server's /metrics and returns its figures
// (promHistogram). It keeps the text as metrics-<file>.txt in the out dir.
// There are no figures when the server did not answer.
func (b seckillRuns) scrapeMetrics(file, route string) benchFigures {
	if route == "" {
		route = "/voucher-order/seckill/:id"
	}
	text, err := testbed.ScrapeMetrics([]string{b.base})
	if err != nil {
		b.logf("no /metrics for %s", file)
		return benchFigures{}
	}
	os.WriteFile(filepath.Join(b.cfg.Out, "metrics-"+file+".txt"), []byte(text), 0o644)
	return promHistogram(text, route)
}

// frozen counts the requests of the run refused as untrusted. The server
// refuses them when the voucher's Redis state is frozen or unsafe. Only a
// reconciler sets that state. Another process starting in async mode on this
// Redis runs one, such as tests or load tests. It checks every live voucher,
// bench vouchers too. A voucher under load always looks inconsistent, so it
// is frozen while being rebuilt.
func (b seckillRuns) frozen(name string) {
	n := strings.Count(benchReadFile(filepath.Join(b.cfg.Out, "server-"+name+".log")), "voucher state in redis not trusted")
	b.put(name, "frozen", strconv.Itoa(n))
	if n > 0 {
		b.logf("%s: %d requests refused while the voucher was frozen or unsafe (another process's start-up reconciliation)", name, n)
	}
}

// k6Exec is one k6 run (tools/bench/arrival.js) at rate arrivals per second. It
// lasts BENCH_DURATION seconds, and every request is a new user. It hits the
// seckill of voucher v, or GET path.
func (b seckillRuns) k6Exec(name string, rate int, v int64, path string) {
	c := b.cfg
	need := rate * (c.Duration + 1)
	tokens := filepath.Join(c.Out, "tokens-k6.csv")
	data, _ := os.ReadFile(filepath.Join(c.Out, "tokens-async.csv"))
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(tokens, []byte(strings.Join(lines[:min(need, len(lines))], "")), 0o644)
	sum := filepath.Join(c.Out, "k6-"+name+".json")
	b.put(name, "rate", strconv.Itoa(rate))
	if b.profileWanted(name) && c.Duration > 3 {
		b.profileStart(name, c.Duration-2, 1500*time.Millisecond) // k6 starts in about a second
	}
	m0 := b.sample(0)
	env := []string{"BENCH_BASE=" + b.base, fmt.Sprintf("BENCH_VOUCHER=%d", v), "BENCH_PATH=" + path, "BENCH_TOKENS=" + tokens,
		fmt.Sprintf("BENCH_RATE=%d", rate), fmt.Sprintf("BENCH_DURATION=%d", c.Duration), fmt.Sprintf("BENCH_VUS=%d", 4*c.Conns), "BENCH_SUMMARY=" + sum}
	args := []string{"run", "--quiet", "--no-color"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	cmd := exec.Command(b.k6, append(args, filepath.Join(b.root, "tools", "bench", "arrival.js"))...)
	out, err := cmd.CombinedOutput()
	txt := filepath.Join(c.Out, "k6-"+name+".txt")
	os.WriteFile(txt, out, 0o644)
	if err != nil {
		b.die("k6 failed: %s", proc.Tail(txt, 5))
	}
	b.put(name, "t_end", strconv.FormatInt(time.Now().UnixNano(), 10))
	b.noteCmd(fmt.Sprintf("%s run --quiet -e BENCH_BASE=%s -e BENCH_VOUCHER=%d -e BENCH_PATH=%s -e BENCH_TOKENS=tokens-k6.csv -e BENCH_RATE=%d -e BENCH_DURATION=%d -e BENCH_VUS=%d -e BENCH_SUMMARY=k6-%s.json tools/bench/arrival.js   # %s; tokens-k6.csv: the first %d lines of tokens-async.csv",
		filepath.Base(b.k6), b.base, v, path, rate, c.Duration, 4*c.Conns, name, name, need))
	sumData, err := os.ReadFile(sum)
	if err != nil {
		b.die("k6 wrote no summary for %s: %v", name, err)
	}
	f, err := k6Figures(sumData)
	if err != nil {
		b.die("k6 summary of %s: %v", name, err)
	}
	b.putAll(name, f)
	m1 := b.sampleEnd(b.childTicks(cmd))
	b.putAll(name, meterFigures(m0, m1, figNum0(b.get(name, "received")), b.hz))
	if v != 0 { // the seckill: every 200 is an order
		b.putAll(name, orderCPUFigures(m0, m1, figNum0(b.get(name, "status_200")), b.hz))
	}
	b.profileFinish(name)
	if b.get(name, "received") != b.get(name, "requests") {
		b.violate(name, fmt.Sprintf("k6: %s responses to %s iterations", b.get(name, "received"), b.get(name, "requests")))
	}
	if b.get(name, "wrapped") != "0" {
		b.violate(name, fmt.Sprintf("k6: %s requests reused a token: raise BENCH_ASYNC_USERS", b.get(name, "wrapped")))
	}
	b.logf("%s: %s responses, %s req/s, p50/p95/p99 %s / %s / %s us, dropped %s", name, b.get(name, "received"), b.get(name, "rps"),
		b.get(name, "p50_us"), b.get(name, "p95_us"), b.get(name, "p99_us"), b.get(name, "dropped"))
	b.logOrderCPU(name)
}

// k6Figures reads a k6 JSON summary (handleSummary's data) into the run's
// figures.
func k6Figures(data []byte) (benchFigures, error) {
	var s struct {
		Metrics map[string]struct {
			Values map[string]float64 `json:"values"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	val := func(metric, k string) float64 { return s.Metrics[metric].Values[k] }
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	f := benchFigures{
		"requests": g(val("iterations", "count")),
		"received": g(val("http_reqs", "count")),
		"rps":      g(val("http_reqs", "rate")),
		"dropped":  g(val("dropped_iterations", "count")),
		"wrapped":  g(val("wrapped", "count")),
		"vus_max":  g(val("vus_max", "max")),
		"max_us":   g(roundHalfAway(val("http_req_duration", "max") * 1000)),
	}
	f["sent"] = f["requests"]
	for _, p := range []string{"50", "90", "95", "99"} {
		f["p"+p+"_us"] = g(roundHalfAway(val("http_req_duration", "p("+p+")") * 1000))
	}
	for _, k := range []string{"200", "409", "429", "5xx", "other"} {
		if n := val("status_"+k, "count"); n != 0 {
			f["status_"+k] = g(n)
		}
	}
	for _, k := range []string{"DUPLICATE_ORDER", "SOLD_OUT", "UNAVAILABLE", "other"} {
		if n := val("code_"+k, "count"); n != 0 {
			f["code_"+k] = g(n)
		}
	}
	return f, nil
}

// roundHalfAway is jq's round.
func roundHalfAway(x float64) float64 {
	if x < 0 {
		return -roundHalfAway(-x)
	}
	return float64(int64(x + 0.5))
}

// k6Run runs k6 at rate on a fresh async server. The voucher's stock is far
// above the request count. Then come the drain, the audit and the checks:
// every response 200, orders = 200s. With floor, the same k6 run first hits
// the no-op endpoint of the same server (<name>-noop). That run is the
// latency floor of this machine and client at that rate.
func (b seckillRuns) k6Run(name, lockMode string, rate int, floor bool) {
	b.logf("k6 %s: %d requests/s for %d s", name, rate, b.cfg.Duration)
	b.startServer("async", lockMode, name)
	if floor {
		b.k6Exec(name+"-noop", rate, 0, "/debug/noop")
		b.serverMetrics(name+"-noop", "/debug/noop")
		if b.get(name+"-noop", "status_200") != b.get(name+"-noop", "received") {
			b.violate(name+"-noop", fmt.Sprintf("%s of %s no-op responses are 200", b.get(name+"-noop", "status_200"), b.get(name+"-noop", "received")))
		}
	}
	v := b.publish(10000000)
	b.k6Exec(name, rate, v, "")
	b.drain(name, v)
	b.otherConsumers(name)
	b.serverMetrics(name, "")
	b.audit(name, v)
	b.orderChecks(name, "BENCH_ASYNC_USERS")
	b.stopServer()
	b.frozen(name)
}
