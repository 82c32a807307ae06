package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RESULTS.md and results.json of `harness bench`.

// benchTargets are the ratios of issues 4 and 5 and the CPU figures and
// ratios of issue 13 in this run ("-": not measured).
type benchTargets struct {
	T1, T2         string // sync lua ÷ slap; soldout ÷ noop
	G1, GP         string // sync lua with group commit ÷ slap; its -pertxn run ÷ slap
	A1, A2, A3, A4 string // async ÷ sync lua; async ÷ admit at the server's depth; drain ÷ insert; k6 p99 ms
	C1, C2         string // server and Redis CPU us per admitted async order
	N1             string // async ÷ async without the drain (-nodrain)
	AR, KR, NR     string // the async, k6 and -nodrain runs of the first async lock mode
	AdmitP         string // the admission limit at AR's pipelining depth ("admit-P<d>"; "" without the depth)
	DrainR         string
	DrainKeptUp    bool
}

// targets computes the ratios from the figures.
func (b reporter) targets() benchTargets {
	t := benchTargets{
		T1: benchRatio(b.get("sync-lua", "rps"), b.get("slap", "rps")),
		T2: benchRatio(b.get("soldout", "rps"), b.get("noop", "rps")),
		G1: benchRatio(b.get("sync-lua", "rps"), b.get("slap", "rps")),
		GP: benchRatio(b.get("sync-lua-pertxn", "rps"), b.get("slap", "rps")),
	}
	alm := ""
	if len(b.cfg.AsyncLockModes) > 0 {
		alm = b.cfg.AsyncLockModes[0]
	}
	t.AR, t.KR = "async-"+alm, "k6-async-"+alm
	t.NR = t.AR + "-nodrain"
	t.A1 = benchRatio(b.get(t.AR, "rps"), b.get("sync-lua", "rps"))
	// The admission script alone at the depth the server pipelined it.
	t.AdmitP = admitPName(b.get(t.AR, "pipeline_mean"))
	t.A2 = "-"
	if t.AdmitP != "" {
		t.A2 = benchRatio(b.get(t.AR, "rps"), b.get(t.AdmitP, "rps"))
	}
	t.N1 = benchRatio(b.get(t.AR, "rps"), b.get(t.NR, "rps"))
	// The drain rate; when the consumers kept up with the load (no
	// backlog), their rate during the load stands for it (a lower bound).
	t.DrainR = b.get(t.AR, "drain_rate")
	if t.DrainR == "" && b.get(t.AR, "orders") != "" {
		t.DrainR = fmt.Sprintf("%.0f", figNum0(b.get(t.AR, "orders"))/float64(b.cfg.Duration))
		t.DrainKeptUp = true
	}
	t.A3 = benchRatio(t.DrainR, b.get("insert", "rps"))
	t.A4 = benchMS(b.get(t.KR, "p99_us"))
	t.C1, t.C2 = dash(b.get(t.AR, "cpu_server_order")), dash(b.get(t.AR, "cpu_redis_order"))
	return t
}

// invariants is "ok" or the number of violations of a run.
func (b reporter) invariants(name string) string {
	n := 0
	for _, v := range b.violations {
		if strings.HasPrefix(v, name+":") {
			n++
		}
	}
	if n == 0 {
		return "ok"
	}
	return fmt.Sprintf("**%d violated**", n)
}

// report writes RESULTS.md (with NOTES.md appended) and results.json; 1
// when a check failed.
func (b reporter) report() int {
	b.info["load_after"] = benchLoadAvg()
	b.info["end"] = time.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	t := b.targets()
	md := b.render(t, b.profileSection)
	notes, err := os.ReadFile(filepath.Join(b.root, "bench", "NOTES.md"))
	if err == nil {
		md += "\n" + string(notes)
	}
	tmp := b.cfg.Results + ".tmp"
	if err := os.WriteFile(tmp, []byte(md), 0o644); err != nil {
		b.die("%v", err)
	}
	if err := os.Rename(tmp, b.cfg.Results); err != nil {
		b.die("%v", err)
	}
	js, err := json.MarshalIndent(b.resultsJSON(t), "", "  ")
	if err != nil {
		b.die("%v", err)
	}
	jsPath := filepath.Join(filepath.Dir(b.cfg.Results), "results.json")
	if err := os.WriteFile(jsPath, append(js, '\n'), 0o644); err != nil {
		b.die("%v", err)
	}
	b.logf("wrote %s and %s (out dir %s)", b.cfg.Results, jsPath, b.cfg.Out)
	b.writeCommands()
	b.logf("targets: lua/slap %s (>= 0.6), soldout/noop %s (>= 0.9)", t.T1, t.T2)
	b.logf("sync group commit: lua/slap %s (>= 1.0), one transaction per order lua/slap %s", t.G1, t.GP)
	if b.cfg.wantAsync() {
		b.logf("async targets: async/sync %s (>= 8), async/EVALSHA at the server's depth (%s) %s (>= 0.4), drain/insert %s (>= 1), k6 p99 %s ms (<= 5)", t.A1, dash(t.AdmitP), t.A2, t.A3, t.A4)
		b.logf("admission with the drain / without it (%s / %s): %s (>= 0.8)", t.AR, t.NR, t.N1)
		b.logf("CPU per admitted async order (%s): server %s us (<= 60), Redis %s us (<= 30)", t.AR, t.C1, t.C2)
	}
	b.logf("violations: %d", len(b.violations))
	if len(b.violations) > 0 {
		return 1
	}
	return 0
}

// profileKeep selects the cumulative pprof lines of the project's frames and
// the library calls that matter for the order path.
var profileKeep = regexp.MustCompile(`seckill/|gorm[.]io/gorm[.][(][*](DB|processor)[)][.]|database/sql[.][(][*](DB|Tx|Stmt)[)][.][A-Z]|go-sql-driver/mysql[.][(][*](mysqlConn|mysqlStmt|mysqlTx)[)][.][A-Z]|go-redis/v9[.][(][*]baseClient[)][.]process$|golang-jwt/jwt/v5[.][(][*]Parser[)][.]ParseWithClaims|gin[.][(][*]Engine[)][.]ServeHTTP|linux[.]Syscall6$|runtime[.](gcBgMarkWorker|mallocgc|schedule)$`)

// profileSummary keeps, of `go tool pprof -top -cum` output, the header and
// the kept frames at ≥ 1.5% cumulative, at most 50 lines.
func profileSummary(top string) string {
	var out []string
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "flat" && strings.HasPrefix(strings.TrimLeft(line, " "), "flat"):
			out = append(out, line)
		case len(f) >= 6 && profileKeep.MatchString(line) && figNum0(strings.TrimSuffix(f[4], "%")) >= 1.5:
			out = append(out, line)
		}
		if len(out) == 50 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// flatTop is `go tool pprof -top` output from its "flat%" header on.
func flatTop(top string) string {
	i := strings.Index(top, "flat%")
	if i < 0 {
		return ""
	}
	i = strings.LastIndex(top[:i], "\n") + 1
	return strings.TrimRight(top[i:], "\n")
}

func (b reporter) pprof(args ...string) string {
	out, _ := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).Output()
	return string(out)
}

// profileSection is the RESULTS.md section of a profile ("" without one).
func (b reporter) profileSection(name string) string {
	p := filepath.Join(b.cfg.Out, name+".pprof")
	if st, err := os.Stat(p); err != nil || st.Size() == 0 {
		return ""
	}
	cum := profileSummary(b.pprof("-top", "-cum", "-nodecount=500", b.bin, p))
	flat := flatTop(b.pprof("-top", "-nodecount=15", b.bin, p))
	return b.profileText(name, cum, flat)
}

// profileText renders a profile section from its two pprof extracts.
func (b reporter) profileText(name, cum, flat string) string {
	g := func(k string) string { return b.get(name, k) }
	var what string
	if run, ok := strings.CutSuffix(name, "-drain"); ok {
		what = fmt.Sprintf("The drain after the load of %s (no load meanwhile): backlog\n%s orders at the end of the load, drained in %s s,\n%s orders/s; profile over the first %s s after the load.",
			run, b.get(run, "backlog"), b.get(run, "drain_secs"), b.get(run, "drain_rate"), g("profile_secs"))
	} else {
		what = fmt.Sprintf("An extra run (its figures count for no target: profiling costs CPU) with the server's CPU profile\ntaken during it (%s s from its second second): %s requests,\n%s req/s, p99 %s ms; CPU %% server / client / MariaDB / Redis / rest:\n%s / %s; CPU us/req server / MariaDB / Redis:\n%s / %s / %s;\nMariaDB per request, queries / prepares / closes: %s.",
			g("profile_secs"), g("requests"), fmtRate(g("rps")), benchMS(g("p99_us")), g("share"), g("rest"),
			g("cpu_server"), g("cpu_mariadb"), g("cpu_redis"), g("db_stmts"))
	}
	p := filepath.Join(b.cfg.Out, name+".pprof")
	return fmt.Sprintf("\n## Profile: %s (a target was missed)\n\n%s\nThe profile is %s (`go tool pprof -top -cum %s %s`).\n\nCumulative, the frames of this project and of the libraries it calls, at 1.5%%\nor more of the server's CPU samples:\n\n```\n%s\n```\n\nFlat, the 15 hottest functions:\n\n```\n%s\n```\n",
		name, what, p, b.bin, p, cum, flat)
}

// seckillRow is one row of the seckill table.
func (b reporter) seckillRow(name string) string {
	var om, lm string
	switch {
	case name == "soldout":
		om, lm = "sync", "lua"
	case strings.HasPrefix(name, "k6-"):
		om, lm = "async", strings.TrimPrefix(name, "k6-async-")
	default:
		om, lm = runModes(name)
	}
	g := func(k string) string { return b.get(name, k) }
	prof := ""
	if g("profiled") == "1" {
		prof = " (profiled)"
	}
	slapRatio := "-"
	if name != "soldout" {
		slapRatio = benchRatio(g("rps"), b.get("slap", "rps"))
	}
	b.mu.Lock()
	ref := benchRefusals(b.runs[name])
	b.mu.Unlock()
	return fmt.Sprintf("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s / %s | %s |\n",
		name, prof, om, lm, g("requests"), fmtRate(g("rps")), benchMS(g("p50_us")), benchMS(g("p99_us")), g("status_200"),
		ref, g("orders"), g("inflight"), b.invariants(name), slapRatio, benchRatio(g("rps"), b.get("noop", "rps")),
		g("share"), g("rest"), g("cpu_server"), g("cpu_mariadb"), g("cpu_redis"), g("db_stmts"))
}

// groupSection compares, for the first sync lock mode, group commit with
// one transaction per order and with mariadb-slap's order transaction, at
// the same concurrency; "" without the -pertxn run.
func (b reporter) groupSection() string {
	var lm string
	for _, name := range b.rows {
		if m, ok := strings.CutSuffix(name, "-pertxn"); ok {
			lm = strings.TrimPrefix(m, "sync-")
		}
	}
	if lm == "" {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, `
## Sync group commit (issue 21)

sync-%[1]s commits concurrent buyers of the voucher together (the default,
SECKILL_SYNC_GROUP_COMMIT=on): the first buyer commits alone at once, the
buyers that arrive meanwhile share the next transaction (up to 64).
sync-%[1]s-pertxn is the course's path (%[2]s): one transaction per order.
Both at %[3]d connections, like mariadb-slap's order transaction, the limit
of one transaction per order on this row. Mean group: sync orders per
commit (seckill_sync_group_size, sum ÷ count).

| run | req/s | ÷ slap txn | p99 ms | mean group (commits) | CPU us/order server / MariaDB |
|---|---:|---:|---:|---:|---|
`, lm, groupCommitOff, b.cfg.Conns)
	for _, name := range []string{"sync-" + lm, "sync-" + lm + "-pertxn"} {
		g := func(k string) string { return dash(b.get(name, k)) }
		group := fmt.Sprintf("%s (%s)", g("group_mean"), g("groups"))
		if strings.HasSuffix(name, "-pertxn") {
			group = "1 (off)"
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %s / %s |\n", name, fmtRate(b.get(name, "rps")),
			benchRatio(b.get(name, "rps"), b.get("slap", "rps")), benchMS(b.get(name, "p99_us")),
			group, g("cpu_server"), g("cpu_mariadb"))
	}
	fmt.Fprintf(&w, "| slap | %s | 1.00 | - | 1 | - / %s |\n", fmtRate(b.get("slap", "rps")), dash(b.get("slap", "cpu_mariadb")))
	return w.String()
}

// runModes is the order and lock mode of a wrk run named
// [profile-]<order mode>-<lock mode>[-nodrain].
func runModes(name string) (orderMode, lockMode string) {
	orderMode, lockMode, _ = strings.Cut(strings.TrimPrefix(name, "profile-"), "-")
	return orderMode, strings.TrimSuffix(strings.TrimSuffix(lockMode, "-nodrain"), "-pertxn")
}

// render is RESULTS.md without NOTES.md; profile renders a profile's
// section.
func (b reporter) render(t benchTargets, profile func(string) string) string {
	c := b.cfg
	in := b.info
	var w strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	k6ver := b.k6ver
	if k6ver == "" {
		k6ver = "-"
	}
	nproc := in["nproc"]
	pf(`# Benchmark results

Written by `+"`harness bench`"+` (cmd/harness) on %s (finished %s).
Every figure below comes from this one run: limits and service runs share the
machine, its load and its database state.

## Machine

| | |
|---|---|
| CPUs (nproc) | %s |
| CPU model | %s |
| memory | %s |
| kernel | %s |
| load average before / after (1, 5, 15 min) | %s / %s |
| Go | %s |
| MariaDB | %s (innodb_flush_log_at_trx_commit=%s) |
| Redis | %s |
| wrk | %s |
| k6 | %s |
| server build | %s |

The machine has %s cores and nothing is pinned: the server, the client
(wrk with %d threads, or k6), MariaDB and Redis share them, so every
figure includes the cost of the client and of the databases on the same
cores. "CPU %%" below is each process's share of the whole machine during the
run (100 = all %s cores); "rest" is CPU used by everything else on the
machine (other work, and the Redlock nodes and ZooKeeper in the modes that
use them): a large "rest" means the run shared the machine with foreign
load. "CPU us/req" is CPU time per response of the server, MariaDB and Redis.
Concurrency is the same everywhere: %d wrk connections
(%d threads), %d redis-benchmark clients, %d mariadb-slap clients
(%d pre-allocated k6 VUs, up to %d). wrk and k6 runs last %d s each.

## Limits

| limit | tool | rate | p50 ms | p99 ms | notes |
|---|---|---:|---:|---:|---|
`, in["start"], in["end"], nproc, in["cpu"], in["mem"], in["kernel"], in["load_before"], in["load_after"], in["go"],
		in["mariadb"], in["flush"], in["redis"], in["wrk"], k6ver, b.build,
		nproc, c.Threads, nproc, c.Conns, c.Threads, c.Conns, c.Conns, 4*c.Conns, 32*c.Conns, c.Duration)
	g := b.get
	pf("| no-op endpoint (GET /debug/noop, same auth middleware) | wrk | %s req/s | %s | %s | CPU %% server / wrk / MariaDB / Redis / rest: %s / %s; server %s us/req |\n",
		fmtRate(g("noop", "rps")), benchMS(g("noop", "p50_us")), benchMS(g("noop", "p99_us")), g("noop", "share"), g("noop", "rest"), g("noop", "cpu_server"))
	pf("| lock acquire (lua/acquire.lua: SET NX PX + fencing INCR) | redis-benchmark EVALSHA | %s ops/s | %s | %s | fresh random key per call |\n",
		fmtRate(g("acquire", "rps")), benchMS(g("acquire", "p50_us")), benchMS(g("acquire", "p99_us")))
	pf("| lock release (lua/unlock.lua: compare-and-delete) | redis-benchmark EVALSHA | %s ops/s | %s | %s | %s of %d calls found their key and deleted it |\n",
		fmtRate(g("release", "rps")), benchMS(g("release", "p50_us")), benchMS(g("release", "p99_us")), in["rel_deleted"], c.RedisN)
	if c.wantAsync() {
		pf("| async admission (lua/seckill.lua: window, duplicate and stock checks; DECR, SADD, XADD, SET EX), depth 1 (no -P) | redis-benchmark EVALSHA | %s ops/s | %s | %s | scratch voucher %s, scratch stream %s; %s of %d calls admitted (the others drew a user id twice: duplicate) |\n",
			fmtRate(g("admit", "rps")), benchMS(g("admit", "p50_us")), benchMS(g("admit", "p99_us")), g("admit", "voucher"), admitStream, g("admit", "admitted"), c.RedisN)
		if p := t.AdmitP; p != "" && g(p, "rps") != "" {
			pf("| the same at the server's pipelining depth (%s: -P %s, %s's mean %s admissions per round trip, rounded) | redis-benchmark EVALSHA | %s ops/s | %s | %s | the same scratch keys; %s of %d calls admitted |\n",
				p, g(p, "depth"), t.AR, g(t.AR, "pipeline_mean"), fmtRate(g(p, "rps")), benchMS(g(p, "p50_us")), benchMS(g(p, "p99_us")), g(p, "admitted"), c.RedisN)
		}
	}
	pf("| order transaction (BEGIN; UPDATE stock; INSERT order; COMMIT) | mariadb-slap | %s txn/s | - | - | %s transactions in %s s, MariaDB %s us CPU/txn; MariaDB per txn, queries / prepares / closes: %s |\n",
		fmtRate(g("slap", "rps")), g("slap", "txns"), g("slap", "secs"), g("slap", "cpu_mariadb"), g("slap", "db_stmts"))
	if c.wantAsync() {
		pf("| single-row order INSERT (autocommit) | mariadb-slap | %s rows/s | - | - | %s rows in %s s, MariaDB %s us CPU/row |\n",
			fmtRate(g("insert", "rps")), g("insert", "txns"), g("insert", "secs"), g("insert", "cpu_mariadb"))
	}
	pf(`
## The seckill (wrk, one new user per request)

Sold-out: a voucher of stock 1 already sold, every request must be 409
SOLD_OUT. The other rows: stock 10,000,000, far above the request count, so
every request must create an order (each token used once). "unanswered" are
requests wrk sent but whose answer it did not wait for when the run stopped;
the check is 200s ≤ orders ≤ 200s + unanswered. In async mode a 200 means
admitted (the order pending); "orders (DB)" is counted after the drain.
A -nodrain row is its async run again with the consumers held during the
load (SECKILL_DEV_CONSUMER_DELAY longer than the load: each consumer holds
the batch it read, unwritten): the admission alone, with the same tokens on
its own voucher; a normal async server drains it afterwards.

| run | order mode | lock mode | requests | req/s | p50 ms | p99 ms | 200 | refusals | orders (DB) | unanswered | invariants | ÷ slap txn | ÷ no-op | CPU %% server / client / MariaDB / Redis / rest | CPU us/req server / MariaDB / Redis | MariaDB per req: queries / prepares / closes |
|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---|---|---|
`)
	for _, name := range append([]string{"soldout"}, b.rows...) {
		w.WriteString(b.seckillRow(name))
	}
	w.WriteString(b.groupSection())
	if c.wantAsync() {
		pf(`
## Async mode (issue 5)

### Drain: the consumers after the load

When the wrk run stops, the orders admitted but not yet written are the
backlog. The bench then polls the voucher's stock in the database and in
Redis every 50 ms until they are equal (every admitted order written), and
reads the audit endpoint (pending must be 0, consistent true). "drain rate"
is the orders written between the first poll and the last, per second, with
no load on the server: the consumers alone (SECKILL_CONSUMERS, default 1;
batches of up to 100 entries: per-user locks, one transaction with a
multi-row INSERT, XACK + XDEL). Its partner is mariadb-slap's single-row
INSERT at %d clients. "other consumers" counts consumers of group g1 in
other processes on this Redis that read stream.orders in the 5 s before the
count (tests in async mode, say): they share the drain. A -nodrain row's
"written during the load" must be 0 (its consumers were held); its drain is
done by a second server, started after the first one stopped, and (after a
load longer than the consumers' batch timeout, 8 s) waits for the batch the
first one held (at most one batch) to be claimed after SECKILL_CLAIM_IDLE
(30 s): its times and rate are not the consumers' speed, and it has no
ratio.

| run | admitted (200s) | written during the load | backlog at the end | first poll after | drained after | drain rate | ÷ single-row INSERT | mean batch (batches) | other consumers | audit after the drain |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
`, c.Conns)
		for _, name := range append(append([]string{}, b.rows...), b.k6Runs...) {
			if !strings.HasPrefix(name, "async-") && !strings.HasPrefix(name, "k6-") {
				continue
			}
			rate := "kept up"
			if r := g(name, "drain_rate"); r != "" {
				rate = r + " orders/s"
			}
			ratio := benchRatio(g(name, "drain_rate"), g("insert", "rps"))
			if strings.HasSuffix(name, "-nodrain") {
				ratio = "-"
			}
			pf("| %s | %s | %s | %s | %s ms | %s s | %s | %s | %s (%s) | %s | pending %s, Redis stock %s, buyers %s, consistent %s |\n",
				name, g(name, "status_200"), g(name, "written_load"), g(name, "backlog"), g(name, "first_poll_ms"), g(name, "drain_secs"),
				rate, ratio, g(name, "batch_mean"), g(name, "batches"), g(name, "other_consumers"),
				g(name, "pending"), g(name, "redis_stock"), g(name, "buyers"), g(name, "consistent"))
		}
		pf(`
### Latency: k6 at a constant arrival rate

bench/arrival.js: k6's constant-arrival-rate executor (an open model: the
arrivals do not wait for the answers), at half the sync `+"`lua`"+` req/s of this
run (BENCH_K6_RATE overrides), for %d s, every request a new user,
on a fresh async server and voucher. Latency is k6's http_req_duration.
The -noop row is the same k6 run on the no-op endpoint (GET /debug/noop,
auth only) of the same server just before: the latency floor of this
machine and client at that rate.
"server ≤ 5 ms" and "server p99 ≤" come from the server's own histogram of
the route (seckill_http_request_duration_seconds: the time inside gin, so
without the client, the kernel's queues and the wait for a CPU; buckets
0.5, 1, 2.5, 5, 10, 25, 50 ms, ...).

| run | rate req/s | requests | 200 | refusals | dropped iterations | VUs used | p50 ms | p90 ms | p95 ms | p99 ms | max ms | server ≤ 5 ms | server p99 ≤ ms | CPU %% server / k6 / MariaDB / Redis / rest | invariants |
|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|
`, c.Duration)
		for _, name := range b.k6Rows() {
			b.mu.Lock()
			ref := benchRefusals(b.runs[name])
			b.mu.Unlock()
			pf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %% | %s | %s / %s | %s |\n",
				name, g(name, "rate"), g(name, "requests"), g(name, "status_200"), ref, g(name, "dropped"), g(name, "vus_max"),
				benchMS(g(name, "p50_us")), benchMS(g(name, "p90_us")), benchMS(g(name, "p95_us")), benchMS(g(name, "p99_us")), benchMS(g(name, "max_us")),
				g(name, "srv_within5"), g(name, "srv_p99_le"), g(name, "share"), g(name, "rest"), b.invariants(name))
		}
		w.WriteString(b.clusterSection())
	}
	pf(`
## Targets, as ratios in this run

| issue | target | measured | required | met |
|---|---|---:|---:|---|
| 4 | sync `+"`lua`"+` req/s ÷ mariadb-slap txn/s | %s | ≥ 0.6 | %s |
| 4, 13 | sold-out req/s ÷ no-op req/s | %s | ≥ 0.9 | %s |
| 21 | sync `+"`lua`"+` with group commit req/s ÷ mariadb-slap txn/s | %s | ≥ 1.0 | %s |
`, t.T1, benchVerdict(atLeast(t.T1, 0.6)), t.T2, benchVerdict(atLeast(t.T2, 0.9)), t.G1, benchVerdict(atLeast(t.G1, 1.0)))
	if c.wantAsync() {
		kept := ""
		if t.DrainKeptUp {
			kept = ", kept up: rate during the load"
		}
		pf("| 5 | async req/s ÷ sync `lua` req/s (%s: %s ÷ %s) | %s | ≥ 8 | %s |\n",
			t.AR, fmtRate(g(t.AR, "rps")), fmtRate(g("sync-lua", "rps")), t.A1, benchVerdict(atLeast(t.A1, 8)))
		depth := "no pipelining depth measured"
		if t.AdmitP != "" {
			depth = fmt.Sprintf("%s: %s ÷ %s; -P %s, the server's mean %s admissions per round trip", t.AdmitP,
				fmtRate(g(t.AR, "rps")), fmtRate(g(t.AdmitP, "rps")), g(t.AdmitP, "depth"), g(t.AR, "pipeline_mean"))
		}
		pf("| 5, 13 | async req/s ÷ EVALSHA seckill.lua ops/s at the server's pipelining depth (%s) | %s | ≥ 0.4 | %s |\n",
			depth, t.A2, benchVerdict(atLeast(t.A2, 0.4)))
		pf("| 5 | drain orders/s ÷ single-row INSERT rows/s (%s%s ÷ %s) | %s | ≥ 1 | %s |\n",
			t.DrainR, kept, fmtRate(g("insert", "rps")), t.A3, benchVerdict(atLeast(t.A3, 1)))
		pf("| 5 | k6 p99 at %s req/s (half the sync `lua` maximum), ms (the no-op endpoint at the same rate: %s) | %s | ≤ 5 | %s |\n",
			g(t.KR, "rate"), benchMS(g(t.KR+"-noop", "p99_us")), t.A4, benchVerdict(atMost(t.A4, 5)))
		pf("| 13 | server CPU per admitted async order, us (%s: /proc utime + stime over the wrk run ÷ its 200s) | %s | ≤ 60 | %s |\n",
			t.AR, t.C1, benchVerdict(atMost(t.C1, 60)))
		pf("| 13 | Redis CPU per admitted async order, us (%s, the same way) | %s | ≤ 30 | %s |\n",
			t.AR, t.C2, benchVerdict(atMost(t.C2, 30)))
		pf("| 13 | admission with the consumers writing ÷ admission without them (%s req/s ÷ %s req/s: %s ÷ %s) | %s | ≥ 0.8 | %s |\n",
			t.AR, t.NR, fmtRate(g(t.AR, "rps")), fmtRate(g(t.NR, "rps")), t.N1, benchVerdict(atLeast(t.N1, 0.8)))
	}
	pf("| 4, 5 | invariant violations, all runs | %d | 0 | %s |\n", len(b.violations), benchVerdict(len(b.violations) == 0))
	if len(b.violations) > 0 {
		pf("\nViolations:\n\n")
		for _, v := range b.violations {
			pf("- %s\n", v)
		}
	}
	if len(b.disturbed) > 0 {
		pf(`
Runs repeated because another process froze their voucher (not counted
above; the first attempt's files are *.disturbed.* in the out dir): another
process starting in async mode on this Redis (a test, a load test) checks
every live voucher at start, bench vouchers included, finds the one under
load inconsistent (its reads race with the admissions and the consumers)
and rebuilds it under freeze; the server answers 503 meanwhile.

`)
		for _, d := range b.disturbed {
			pf("- %s\n", d)
		}
	}
	w.WriteString(admissionSection(b.admission))
	for _, name := range b.profiled {
		w.WriteString(profile(name))
	}
	relSpace, _ := strconv.Atoi(in["rel_space"])
	pf(`
## Commands

The exact commands `+"`harness bench`"+` (cmd/harness) ran (the tokens-*.csv and
admin.csv files are `+"`seckill tokens`"+` outputs in the out directory):

`+"```"+`
%s
`+"```"+`

Before the release run, keys bench:lock:000000000000 .. %012d are set
to bench-owner (one EVAL loop per 100,000 keys); all bench:lock:* keys are
removed afterwards. The admission limits' scratch keys (seckill:*:%s,
%s, seckill:orderinfo:<12 digits>) are removed after each of their runs.
The mariadb-slap vouchers and their orders are deleted after their runs; the
seckill vouchers and their orders after the whole run (unless BENCH_KEEP=1).

mariadb-slap, in full (statement count = 4 statements × %d transactions × %d clients; for the INSERT 1 × %d × %d):

`+"```"+`
%s
%s
`+"```"+`

Servers were started as
`+"`SECKILL_HTTP_ADDR=127.0.0.1:%d SECKILL_ORDER_MODE=<order mode> SECKILL_LOCK_MODE=<lock mode> SECKILL_ENV=development SECKILL_LOG_LEVEL=warn seckill serve`"+`
with SECKILL_MYSQL_DSN, SECKILL_REDIS_ADDR, SECKILL_REDLOCK_ADDRS and
SECKILL_ZK_ADDRS of .ci/env.sh, one fresh process per row; a -nodrain row's
server also with SECKILL_DEV_CONSUMER_DELAY (above), and a second, normal
one for its drain.
`, strings.Join(b.commands, "\n"), relSpace-1, in["admit_v"], admitStream, c.SlapTxns, c.Conns, 4*c.SlapTxns, c.Conns,
		g("slap", "cmd"), g("insert", "cmd"), c.Port)
	// Paths relative to the repository, as a reader would type them.
	return strings.ReplaceAll(w.String(), b.root+"/", "")
}

// k6Rows are the rows of the k6 table: each k6 run after its -noop floor.
func (b reporter) k6Rows() []string {
	var rows []string
	for _, name := range append(append([]string{}, b.k6Runs...), b.profiledK6...) {
		if b.get(name+"-noop", "requests") != "" {
			rows = append(rows, name+"-noop")
		}
		rows = append(rows, name)
	}
	return rows
}

// BenchJSON is results.json: every figure of the run, for tools (charts, a
// dashboard). Figures are numbers where RESULTS.md shows one number, else
// strings ("34 / 4 / 37 / 5": see the *_parts fields).
type BenchJSON struct {
	Schema     int               `json:"schema"`
	Started    string            `json:"started"`
	Finished   string            `json:"finished"`
	Machine    map[string]string `json:"machine"`
	Settings   map[string]any    `json:"settings"`
	Limits     []BenchJSONRun    `json:"limits"`
	Runs       []BenchJSONRun    `json:"runs"` // wrk runs (then the cluster block's), then k6 runs
	Profiled   []BenchJSONRun    `json:"profiled"`
	Targets    []BenchJSONTarget `json:"targets"`
	Violations []string          `json:"violations"`
	Disturbed  []string          `json:"disturbed"`
	Commands   []string          `json:"commands"`
	Results    string            `json:"results"` // RESULTS.md, relative to the repository
	OutDir     string            `json:"outDir"`
	// ClusterNodes are the nodes of the Redis Cluster block, masters first
	// (absent without the block); its runs are cluster-<buckets>.
	ClusterNodes []BenchJSONNode `json:"clusterNodes,omitempty"`
	// CommandCosts are the Redis work per admitted order by node and
	// command (cost.go; COMMANDS.md), absent when none was measured.
	CommandCosts []*costRun `json:"commandCosts,omitempty"`
	// AdmissionProfile names the files of BENCH_ADMISSION_PROFILE's
	// profiles, relative to the repository (absent without them).
	AdmissionProfile *benchJSONProfile `json:"admissionProfile,omitempty"`
}

// benchJSONProfile is the admission profiles' entry of results.json.
type benchJSONProfile struct {
	Run   string   `json:"run"`
	Files []string `json:"files"`
}

type BenchJSONRun struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"` // limit, wrk, k6
	OrderMode string         `json:"orderMode,omitempty"`
	LockMode  string         `json:"lockMode,omitempty"`
	Tool      string         `json:"tool,omitempty"`
	OK        bool           `json:"ok"` // no violation of this run
	Figures   map[string]any `json:"figures"`
}

// The names of the targets in results.json (docs/bench.svg finds them by
// these names).
const (
	TargetSyncSlap    = "sync lua req/s ÷ mariadb-slap txn/s"
	TargetSoldoutNoop = "sold-out req/s ÷ no-op req/s"
	targetGroupSlap   = "sync lua with group commit req/s ÷ mariadb-slap txn/s"
	TargetAsyncSync   = "async req/s ÷ sync lua req/s"
	TargetAsyncAdmit  = "async req/s ÷ EVALSHA seckill.lua ops/s at the server's pipelining depth"
	TargetDrainInsert = "drain orders/s ÷ single-row INSERT rows/s"
	TargetK6P99       = "k6 p99 ms at half the sync lua req/s"
	TargetViolations  = "invariant violations, all runs"
	targetServerCPU   = "server CPU us per admitted async order"
	targetRedisCPU    = "Redis CPU us per admitted async order"
	TargetNoDrain     = "async req/s ÷ async req/s without the consumers writing"
)

type BenchJSONTarget struct {
	Issue    string   `json:"issue"`
	Name     string   `json:"name"`
	Measured *float64 `json:"measured"` // null: not measured
	Op       string   `json:"op"`       // ">=" or "<="
	Required float64  `json:"required"`
	Met      bool     `json:"met"`
}

// jsonFigures converts a run's figures: numbers as numbers, "a / b / c"
// lists also as arrays (key_parts), the rest as strings; t_end and cmd out.
func jsonFigures(f benchFigures) map[string]any {
	out := map[string]any{}
	for k, v := range f {
		if k == "t_end" {
			continue
		}
		if x, ok := figNum(v); ok {
			out[k] = x
			continue
		}
		out[k] = v
		if strings.Contains(v, " / ") {
			var parts []float64
			for _, p := range strings.Split(v, " / ") {
				x, ok := figNum(p)
				if !ok {
					parts = nil
					break
				}
				parts = append(parts, x)
			}
			if parts != nil {
				out[k+"_parts"] = parts
			}
		}
	}
	return out
}

func (b reporter) resultsJSON(t benchTargets) BenchJSON {
	c := b.cfg
	rel := func(p string) string { return strings.TrimPrefix(p, b.root+"/") }
	j := BenchJSON{
		Schema: 1, Started: b.info["start"], Finished: b.info["end"],
		Machine: map[string]string{
			"nproc": b.info["nproc"], "cpu": b.info["cpu"], "memory": b.info["mem"], "kernel": b.info["kernel"],
			"loadBefore": b.info["load_before"], "loadAfter": b.info["load_after"], "go": b.info["go"],
			"mariadb": b.info["mariadb"], "innodbFlushLogAtTrxCommit": b.info["flush"], "redis": b.info["redis"],
			"wrk": b.info["wrk"], "k6": b.k6ver, "build": rel(b.build),
		},
		Settings: map[string]any{
			"duration": c.Duration, "threads": c.Threads, "conns": c.Conns, "users": c.Users, "asyncUsers": c.AsyncUsers,
			"skipUsers": c.SkipUsers, "orderModes": c.OrderModes, "lockModes": c.LockModes, "asyncLockModes": c.AsyncLockModes,
			"k6Rate": c.K6Rate, "drainTimeout": c.DrainTimeout, "redisN": c.RedisN, "slapTxns": c.SlapTxns, "port": c.Port,
			"profile": strings.Fields(c.ProfileSetting),
		},
		Violations: append([]string{}, b.violations...),
		Disturbed:  append([]string{}, b.disturbed...),
		Results:    rel(c.Results), OutDir: rel(c.Out),
	}
	j.CommandCosts = b.costs
	for _, cmd := range b.commands {
		j.Commands = append(j.Commands, strings.ReplaceAll(cmd, b.root+"/", ""))
	}
	if p := b.admission; p != nil {
		jp := &benchJSONProfile{Run: p.Run, Files: []string{}}
		for _, f := range p.Files {
			jp.Files = append(jp.Files, rel(filepath.Join(p.Dir, f)))
		}
		j.AdmissionProfile = jp
	}
	run := func(name, kind, tool string) BenchJSONRun {
		b.mu.Lock()
		f := jsonFigures(b.runs[name])
		b.mu.Unlock()
		if cmd, ok := f["cmd"].(string); ok {
			f["cmd"] = strings.ReplaceAll(cmd, b.root+"/", "")
		}
		r := BenchJSONRun{Name: name, Kind: kind, Tool: tool, OK: b.invariants(name) == "ok", Figures: f}
		switch {
		case name == "soldout":
			r.OrderMode, r.LockMode = "sync", "lua"
		case kind == "k6" || strings.HasPrefix(name, "profile-k6-"):
			r.OrderMode = "async"
			r.LockMode = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(name, "profile-"), "k6-async-"), "-noop")
		case kind == "wrk":
			r.OrderMode, r.LockMode = runModes(name)
		}
		return r
	}
	limit := func(name, tool string, extra map[string]any) {
		b.mu.Lock()
		_, ok := b.runs[name]
		b.mu.Unlock()
		if !ok {
			return
		}
		r := run(name, "limit", tool)
		for k, v := range extra {
			r.Figures[k] = v
		}
		j.Limits = append(j.Limits, r)
	}
	n := func(k string) any {
		if x, ok := figNum(b.info[k]); ok {
			return x
		}
		return nil
	}
	limit("noop", "wrk", nil)
	limit("acquire", "redis-benchmark", map[string]any{"calls": c.RedisN})
	limit("release", "redis-benchmark", map[string]any{"calls": c.RedisN, "deleted": n("rel_deleted")})
	limit("admit", "redis-benchmark", map[string]any{"calls": c.RedisN})
	if t.AdmitP != "" {
		limit(t.AdmitP, "redis-benchmark", map[string]any{"calls": c.RedisN})
	}
	limit("slap", "mariadb-slap", nil)
	limit("insert", "mariadb-slap", nil)
	for _, name := range append([]string{"soldout"}, b.rows...) {
		j.Runs = append(j.Runs, run(name, "wrk", "wrk"))
	}
	for _, name := range b.clusterRows {
		r := run(name, "wrk", "wrk")
		r.OrderMode, r.LockMode = "async", "lua"
		j.Runs = append(j.Runs, r)
	}
	for _, n := range b.clusterNodes_ {
		j.ClusterNodes = append(j.ClusterNodes, BenchJSONNode{Addr: n.Addr, Role: n.Role})
	}
	for _, name := range b.k6Rows() {
		if strings.HasPrefix(name, "profile-") {
			continue
		}
		j.Runs = append(j.Runs, run(name, "k6", "k6"))
	}
	names := make([]string, 0)
	for _, name := range b.profiled {
		names = append(names, name)
		if b.get(name+"-noop", "requests") != "" {
			names = append(names, name+"-noop")
		}
	}
	sort.Strings(names)
	for _, name := range names {
		kind, tool := "wrk", "wrk"
		if strings.HasPrefix(name, "profile-k6-") {
			kind, tool = "k6", "k6"
		} else if strings.HasSuffix(name, "-drain") {
			kind, tool = "drain", ""
		}
		j.Profiled = append(j.Profiled, run(name, kind, tool))
	}
	target := func(issue, name, measured, op string, required float64) {
		tg := BenchJSONTarget{Issue: issue, Name: name, Op: op, Required: required}
		if x, ok := figNum(measured); ok {
			tg.Measured = &x
		}
		if op == ">=" {
			tg.Met = atLeast(measured, required)
		} else {
			tg.Met = atMost(measured, required)
		}
		j.Targets = append(j.Targets, tg)
	}
	target("4", TargetSyncSlap, t.T1, ">=", 0.6)
	target("4, 13", TargetSoldoutNoop, t.T2, ">=", 0.9)
	if c.wantAsync() {
		target("5", TargetAsyncSync, t.A1, ">=", 8)
		target("5, 13", TargetAsyncAdmit, t.A2, ">=", 0.4)
		target("5", TargetDrainInsert, t.A3, ">=", 1)
		target("5", TargetK6P99, t.A4, "<=", 5)
		target("13", targetServerCPU, t.C1, "<=", 60)
		target("13", targetRedisCPU, t.C2, "<=", 30)
		target("13", TargetNoDrain, t.N1, ">=", 0.8)
	}
	target("4, 5", TargetViolations, strconv.Itoa(len(b.violations)), "<=", 0)
	target("21", targetGroupSlap, t.G1, ">=", 1.0)
	return j
}
