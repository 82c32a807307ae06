package loadrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"seckill/tools/cmd/harness/testbed"
)

// harness matrix runs every lock mode x 1 and 2 instances x {normal, slow
// business}. It adds the async path (Lua admission, orders through the
// streams) on one Redis and on the Redis Cluster. Each cell is one
// `harness loadtest` run with MATRIX=1: a design that breaks is reported,
// not failed. Then it writes tools/loadtest/RESULTS.md with the machine, the
// date, the command and the tables. tools/loadtest/results.json goes beside it.
//
//   make loadtest-matrix                 (MODES="lua redsync" to narrow the
//                                         sync rows, SETTINGS="async" to run
//                                         only the async rows)
//
// Settings:
//   normal  USERS=300 STOCK=200 DUPS=4 SPACING_MS=0. Each user fires 4
//           purchases at once, 2 per instance with 2 instances. Lease 10 s.
//   slow    USERS=150 STOCK=150 DUPS=4 SPACING_MS=600, lease 1 s, critical
//           delay 2.5 s. The first purchase holds the lock 2.5 s. The lease
//           runs out after 1 s. The duplicates arrive at 0.6, 1.2 and
//           1.8 s, all while the first is still inside.
//   async   as normal, with ORDER_MODE=async and the consumer's lock
//           ASYNC_MODES [lua]. It runs for each of asyncVariants: one
//           Redis, then the cluster of SECKILL_TEST_CLUSTER_ADDRS
//           (.ci/env.sh). The cluster holds the voucher's stock in 1
//           bucket and in 8. The audit waits for the streams to drain and
//           checks invariant 5 too.
//
// Exit status: non-zero when a run could not be made or broke an
// invariant. Also non-zero when a design expected to hold let a duplicate
// through or answered anything but 200/409. Designs expected to break only
// report.

// Expectation says whether a design is expected to hold or break.
func Expectation(mode string, instances int, setting string) string {
	switch mode {
	case "none":
		return "breaks"
	case "local":
		if instances > 1 {
			return "breaks"
		}
	case "simple", "owner", "lua":
		if setting == "slow" {
			return "breaks"
		}
	}
	return "holds"
}

// asyncVariant is where an async row runs: REDIS and BUCKETS of harness loadtest.
type asyncVariant struct {
	Redis   string // single | cluster
	Buckets int
}

// asyncVariants are the async rows of every instance count. First one Redis,
// then the cluster with the voucher in one bucket and in eight. The eight
// buckets spread its admissions over the three masters.
var asyncVariants = []asyncVariant{{"single", 1}, {"cluster", 1}, {"cluster", 8}}

// MatrixRun is one cell of the matrix.
type MatrixRun struct {
	Mode      string  `json:"mode"`
	Instances int     `json:"instances"`
	Setting   string  `json:"setting"`
	Redis     string  `json:"redis,omitempty"`   // async rows: single | cluster
	Buckets   int     `json:"buckets,omitempty"` // async rows
	Expected  string  `json:"expected"`          // holds | breaks
	Verdict   string  `json:"verdict"`           // as in the table
	Problem   string  `json:"problem,omitempty"`
	Log       string  `json:"log"`
	Result    *Result `json:"result"` // nil when the run failed
}

// JudgeCell fills the verdict and the problem of a run.
func JudgeCell(m *MatrixRun) {
	r := m.Result
	if r == nil {
		m.Verdict = "run failed"
		m.Problem = fmt.Sprintf("%s: the run failed, see %s", m.cell(), m.Log)
		return
	}
	got := "holds"
	if r.Breaches > 0 {
		got = "breaks"
	}
	cell := m.cell()
	switch {
	case len(r.Violations) > 0:
		m.Verdict = "**VIOLATED INVARIANTS**"
		m.Problem = fmt.Sprintf("%s: %d invariant violation(s), see %s/report.txt", cell, len(r.Violations), r.Out)
	case m.Expected == "holds" && got == "breaks":
		m.Verdict = "**breaks, expected to hold**"
		m.Problem = fmt.Sprintf("%s: %d duplicate(s) got past a lock expected to hold", cell, r.Breaches)
	case m.Expected == "holds" && r.Unexpected > 0:
		m.Verdict = fmt.Sprintf("holds, **%d unexpected answers**", r.Unexpected)
		m.Problem = fmt.Sprintf("%s: %d answers neither 200 nor 409 (%s)", cell, r.Unexpected, r.OtherCodes)
	case m.Expected == "breaks" && got == "holds":
		m.Verdict = "held this time (expected to break)"
	default:
		m.Verdict = got + " (as expected)"
	}
}

// cell names the run: "lua x 2 (slow)", "lua x 2 (async, cluster, 8 buckets)".
func (m MatrixRun) cell() string {
	if m.Setting != "async" {
		return fmt.Sprintf("%s x %d (%s)", m.Mode, m.Instances, m.Setting)
	}
	return fmt.Sprintf("%s x %d (async, %s, %d bucket%s)", m.Mode, m.Instances, redisShort(m.Redis), m.Buckets, plural(m.Buckets))
}

// redisShort names an async row's Redis in a table cell.
func redisShort(kind string) string {
	if kind == "cluster" {
		return "cluster"
	}
	return "one Redis"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// asyncRow is an async run's row of RESULTS.md (the second table).
func (m MatrixRun) asyncRow() string {
	r := m.Result
	lead := fmt.Sprintf("| %s | %d | %s | %d |", redisShort(m.Redis), m.Buckets, m.Mode, m.Instances)
	if r == nil {
		return lead + " run failed | | | | | | | | | | | | |"
	}
	other := r.OtherCodes
	if other == "" {
		other = "-"
	}
	return fmt.Sprintf("%s %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s / %s / %s | %s |",
		lead, r.Requests, r.Codes["OK"], r.Codes["SOLD_OUT"], r.Codes["DUPLICATE_ORDER"], r.ScriptRefused, r.UniqueKey,
		other, testbed.YesNo(r.Oversold), testbed.YesNo(r.Consistent), r.Invariant5, r.RPS, r.P50ms, r.P95ms, r.P99ms, m.Verdict)
}

// tableRow is the run's row of RESULTS.md.
func (m MatrixRun) tableRow() string {
	r := m.Result
	if r == nil {
		return fmt.Sprintf("| %s | %d | %s | run failed | | | | | | | | | | | |", m.Mode, m.Instances, m.Setting)
	}
	other := r.OtherCodes
	if other == "" {
		other = "-"
	}
	return fmt.Sprintf("| %s | %d | %s | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s / %s / %s | %s |",
		m.Mode, m.Instances, m.Setting, r.Requests, r.Codes["OK"], r.Codes["SOLD_OUT"], r.Codes["DUPLICATE_ORDER"],
		r.LockRefused, r.PastLock, r.UniqueKey, other, testbed.YesNo(r.Oversold), testbed.YesNo(r.Consistent), r.RPS,
		r.P50ms, r.P95ms, r.P99ms, m.Verdict)
}

// MatrixReport is tools/loadtest/results.json.
type MatrixReport struct {
	Generated string            `json:"generated"`
	ElapsedS  int               `json:"elapsedS"`
	Machine   map[string]string `json:"machine"`
	Runs      []MatrixRun       `json:"runs"`
	Problems  []string          `json:"problems"`
}

// RunMatrix is `harness matrix`: every lock mode, setting and instance
// count, each one loadtest run.
func RunMatrix(args []string) int {
	root, err := testbed.CIRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[matrix] ERROR: %v\n", err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "[matrix] "+format+"\n", a...) }
	modes := strings.Fields(testbed.EnvOr("MODES", "none local simple owner lua reentrant redsync multi mysql zookeeper"))
	counts := strings.Fields(testbed.EnvOr("INSTANCE_COUNTS", "1 2"))
	settings := strings.Fields(testbed.EnvOr("SETTINGS", "normal slow async"))
	asyncModes := strings.Fields(testbed.EnvOr("ASYNC_MODES", "lua"))
	results := testbed.EnvOr("RESULTS", filepath.Join(root, "tools/loadtest/RESULTS.md"))
	outdir := filepath.Join(root, "tools/loadtest/out", "matrix-"+time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(outdir, 0o755); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	logf("building bin/seckill")
	if err := testbed.GoBuild(context.Background(), root, "bin/seckill", "."); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	started := time.Now()
	loadStart := loadAvg()
	rep := MatrixReport{Problems: []string{}}
	cells := matrixCells(settings, modes, asyncModes, counts)
	for _, c := range cells {
		m, env := c.run, c.env
		dir := filepath.Join(outdir, c.dir)
		// The lock's verdict, not the group committer's: see ltConfig.GroupCommit.
		env = append(env, "MATRIX=1", "SKIP_BUILD=1", "GROUP_COMMIT=off", "OUT="+dir)
		m.Log = dir + ".log"
		logf("%s", m.cell())
		if code, _ := testbed.RunTool(context.Background(), 30*time.Minute, m.Log, env, self, "loadtest"); code == 0 {
			var r Result
			if b, err := os.ReadFile(filepath.Join(dir, "results.json")); err == nil && json.Unmarshal(b, &r) == nil {
				m.Result = &r
			}
		}
		JudgeCell(&m)
		if m.Problem != "" {
			rep.Problems = append(rep.Problems, m.Problem)
		}
		if r := m.Result; r != nil {
			logf("  -> %s (200: %d, past lock: %d, script: %d, unique key: %d, oversold: %s, consistent: %s)",
				m.Verdict, r.Codes["OK"], r.PastLock, r.ScriptRefused, r.UniqueKey, testbed.YesNo(r.Oversold), testbed.YesNo(r.Consistent))
		}
		rep.Runs = append(rep.Runs, m)
	}
	rep.ElapsedS = int(time.Since(started).Seconds())
	rep.Generated = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	rep.Machine = machineFacts(root)
	rep.Machine["loadStart"], rep.Machine["loadEnd"] = loadStart, loadAvg()
	text := renderMatrix(rep)
	if err := os.WriteFile(results, []byte(text), 0o644); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	if err := testbed.WriteJSON(filepath.Join(filepath.Dir(results), "results.json"), rep); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	logf("wrote %s (%d s); runs under %s", results, rep.ElapsedS, outdir)
	fmt.Print(text)
	if len(rep.Problems) > 0 {
		logf("FAIL: %d problem(s):", len(rep.Problems))
		for _, p := range rep.Problems {
			fmt.Fprintf(os.Stderr, "  %s\n", p)
		}
		return 1
	}
	return 0
}

// matrixCell is one harness loadtest run of the matrix, before it runs.
type matrixCell struct {
	run MatrixRun
	env []string // harness loadtest's settings
	dir string   // its output directory's name
}

// matrixCells lists the runs in table order. For each setting, it takes each
// mode, then each instance count. The async setting takes asyncModes, with
// each of asyncVariants in turn.
func matrixCells(settings, modes, asyncModes, counts []string) []matrixCell {
	var cells []matrixCell
	add := func(mode, n, setting string, v asyncVariant, env []string) {
		m := MatrixRun{Mode: mode, Setting: setting}
		fmt.Sscan(n, &m.Instances)
		m.Expected = Expectation(mode, m.Instances, setting)
		dir := fmt.Sprintf("%s-%s-%s", mode, n, setting)
		if setting == "async" {
			m.Redis, m.Buckets = v.Redis, v.Buckets
			dir = fmt.Sprintf("%s-%s-async-%s-%d", mode, n, v.Redis, v.Buckets)
			env = append(env, "ORDER_MODE=async", "REDIS="+v.Redis, fmt.Sprintf("BUCKETS=%d", v.Buckets))
		}
		cells = append(cells, matrixCell{run: m, env: append(env, "MODE="+mode, "INSTANCES="+n), dir: dir})
	}
	for _, setting := range settings {
		switch setting {
		case "async":
			for _, mode := range asyncModes {
				for _, v := range asyncVariants {
					for _, n := range counts {
						add(mode, n, setting, v, []string{"SLOW=0", "USERS=300", "STOCK=200", "DUPS=4"})
					}
				}
			}
		default:
			for _, mode := range modes {
				for _, n := range counts {
					env := []string{"SLOW=0", "USERS=300", "STOCK=200", "DUPS=4"}
					if setting == "slow" {
						env = []string{"SLOW=1", "USERS=150", "STOCK=150", "DUPS=4"}
					}
					add(mode, n, setting, asyncVariant{}, env)
				}
			}
		}
	}
	return cells
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// machineFacts describes the machine and the software for RESULTS.md.
func machineFacts(root string) map[string]string {
	out := func(name string, args ...string) string {
		b, _ := exec.Command(name, args...).Output()
		return strings.TrimSpace(string(b))
	}
	m := map[string]string{"uname": out("uname", "-srm"), "cores": fmt.Sprint(runtime.NumCPU())}
	if f := strings.Fields(out("go", "version")); len(f) >= 3 {
		m["go"] = f[2]
	}
	gp := out("go", "env", "GOPATH")
	if f := strings.Fields(out(filepath.Join(gp, "bin/k6"), "version")); len(f) >= 2 {
		m["k6"] = f[0] + " " + f[1]
	}
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	if s := regexp.MustCompile(`(?m)^model name\s*: (.*)$`).FindSubmatch(cpu); s != nil {
		m["cpu"] = string(s[1])
	}
	mem, _ := os.ReadFile("/proc/meminfo")
	if s := regexp.MustCompile(`(?m)^MemTotal:\s*([0-9]+)`).FindSubmatch(mem); s != nil {
		var kb float64
		fmt.Sscan(string(s[1]), &kb)
		m["memory"] = fmt.Sprintf("%.0f GiB", kb/1048576)
	}
	if s := regexp.MustCompile(`Distrib ([0-9.]*)-MariaDB`).FindStringSubmatch(out("mariadb", "--version")); s != nil {
		m["mariadb"] = "MariaDB " + s[1]
	} else if s := regexp.MustCompile(`from ([0-9.]*)-MariaDB`).FindStringSubmatch(out("mariadb", "--version")); s != nil {
		m["mariadb"] = "MariaDB " + s[1]
	}
	if s := regexp.MustCompile(` v=([0-9.]*)`).FindStringSubmatch(out("redis-server", "--version")); s != nil {
		m["redis"] = "Redis " + s[1]
	}
	if zk, _, _ := strings.Cut(os.Getenv("SECKILL_ZK_ADDRS"), ","); zk != "" {
		if c, err := net.DialTimeout("tcp", zk, 2*time.Second); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte("srvr"))
			buf := make([]byte, 256)
			k, _ := c.Read(buf)
			c.Close()
			if s := regexp.MustCompile(`^Zookeeper version: ([0-9.]*)`).FindSubmatch(buf[:k]); s != nil {
				m["zookeeper"] = "ZooKeeper " + string(s[1])
			}
		}
	}
	return m
}

// renderMatrix is tools/loadtest/RESULTS.md.
func renderMatrix(rep MatrixReport) string {
	m := rep.Machine
	var b strings.Builder
	fmt.Fprintf(&b, `# Load-test matrix

Generated by `+"`make loadtest-matrix`"+` (go -C tools run ./cmd/harness matrix) on %s, in %d s.

- Machine: %s, %s, %s cores, %s; everything (k6, the
  instances, MariaDB, Redis x4, ZooKeeper) on this one machine.
- Software: %s, %s, %s, %s, %s.
- Load average of the machine (1 min) at the start and at the end: %s and %s
  (other work on the machine shows in req/s and latencies, never in the counts).
`, rep.Generated, rep.ElapsedS, m["uname"], testbed.Or(m["cpu"], "unknown CPU"), m["cores"], m["memory"],
		m["go"], testbed.Or(m["k6"], "k6 ?"), testbed.Or(m["mariadb"], "MariaDB ?"), testbed.Or(m["redis"], "Redis ?"), testbed.Or(m["zookeeper"], "ZooKeeper ?"),
		m["loadStart"], m["loadEnd"])
	b.WriteString(matrixPreamble)
	var async []MatrixRun
	for _, r := range rep.Runs {
		if r.Setting == "async" {
			async = append(async, r)
			continue
		}
		b.WriteString(r.tableRow() + "\n")
	}
	b.WriteString(matrixReading)
	if len(async) > 0 {
		b.WriteString(matrixAsyncPreamble)
		for _, r := range async {
			b.WriteString(r.asyncRow() + "\n")
		}
		b.WriteString(matrixAsyncReading)
	}
	if len(rep.Problems) > 0 {
		b.WriteString("\n## Problems in this run\n\n")
		for _, p := range rep.Problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	return b.String()
}

const matrixPreamble = "- Command: `make loadtest-matrix`, that is for every mode, 1 and 2 instances, and both settings:\n" +
	"  `make loadtest MODE=<mode> INSTANCES=<n> [SLOW=1] MATRIX=1 GROUP_COMMIT=off` (go -C tools run ./cmd/harness loadtest,\n" +
	"  driver k6, scenario `burst`: each user fires DUPS=4 purchases round-robin over the instances).\n" +
	"  Sync group commit is off (`SECKILL_SYNC_GROUP_COMMIT=off`, one transaction per order): within one\n" +
	"  instance the group committer serialises a voucher's commits, and a user's concurrent duplicates\n" +
	"  would meet the \"already bought\" check one after another whatever the lock did (with it on, `none`\n" +
	"  on one instance held: 600 duplicates stopped past the lock, 0 by the unique key).\n" +
	`- **normal**: 300 users, stock 200, the 4 purchases of a user at the same instant, lease 10 s,
  no delay.
- **slow business**: 150 users, stock 150, lease ` + "`SECKILL_LOCK_TTL=1s`" + `, development delay
  ` + "`SECKILL_DEV_CRITICAL_DELAY=2500ms`" + ` inside the critical section (after the lock, before the
  order transaction), a user's purchases at 0, 0.6, 1.2 and 1.8 s: every duplicate arrives while
  the first purchase is still inside, so a lock that holds refuses all of them.

Columns: *requests* purchases sent; *200* orders announced; *SOLD_OUT* / *DUPLICATE* the 409
codes; the DUPLICATE_ORDER answers split by where they were stopped, from the instances'
` + "`/metrics`" + `: *lock refused* (` + "`seckill_lock_not_obtained_total`" + `), *past lock* (the duplicate
obtained the lock and the order transaction's "already bought" check stopped it), *unique key*
(` + "`seckill_unique_key_rejections_total`" + `: only the database's UNIQUE (user_id, voucher_id)
stopped it); *oversold* and *consistent* from the audit of the database itself (testkit/audit and
model.Facts, the invariant code of the tests: orders <= initial stock, orders = initial - stock, no
user with two orders, the order ids of the 200s = the orders in the database); *req/s* and the
latency percentiles as k6 measured them (slow-business latencies include the 2.5 s delay).
*Verdict*: a lock "breaks" when a duplicate got past it: unique-key rejections > 0, or in the slow
setting any past-lock duplicate. The same figures, machine-readable: tools/loadtest/results.json.

| mode | inst | setting | requests | 200 | SOLD_OUT | DUPLICATE | lock refused | past lock | unique key | other codes | oversold | consistent | req/s | p50 / p95 / p99 ms | verdict |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`

const matrixReading = "\n## Reading it\n\n" +
	"- Nothing is ever oversold and every run stays consistent, whatever the lock: the stock UPDATE\n" +
	"  is conditional (`stock > 0`, RowsAffected checked) and the order transaction checks \"already\n" +
	"  bought\" before the UNIQUE (user_id, voucher_id) key. The lock's job is to keep a user's\n" +
	"  duplicates away from the database; the matrix measures how many it let through.\n" +
	"- `none` lets every duplicate through; with the 4 purchases of a user at the same instant, their\n" +
	"  transactions overlap, and the unique key is what stops them.\n" +
	"- `local` holds inside one process and breaks across two: each instance has its own mutex.\n" +
	"- `simple`, `owner`, `lua` hold as long as the work fits in the lease. With the work longer than\n" +
	"  the lease (slow business) the key expires while the first purchase is still inside, and the\n" +
	"  next duplicate gets the lock: one breach per user. Because every holder waits the same\n" +
	"  2.5 s before its transaction, the two transactions of a user run 1.2 s apart, never together,\n" +
	"  so the transaction's own \"already bought\" check stops the second (*past lock*), not the unique\n" +
	"  key. Under real slowness of varying length the two could overlap, and then only the unique key\n" +
	"  would be left.\n" +
	"- `reentrant`, `redsync`, `multi` renew the lease with a watchdog (every TTL/3) while the holder\n" +
	"  works; `mysql` (GET_LOCK, held by the session) and `zookeeper` (ephemeral sequential node, held\n" +
	"  by the session) have no lease to run out. All five refuse every duplicate in the slow setting.\n"

const matrixAsyncPreamble = "\n## Async admission, on one Redis and on the Redis Cluster\n\n" +
	"- Command: the same `make loadtest-matrix`, setting **async**: `make loadtest MODE=lua ORDER_MODE=async\n" +
	"  REDIS=<single|cluster> BUCKETS=<n> INSTANCES=<n> MATRIX=1`, 300 users, stock 200, each user's 4\n" +
	"  purchases at the same instant and, with 2 instances, 2 on each: the same user on both instances\n" +
	"  at once. *one Redis* is SECKILL_REDIS_ADDR; *cluster* the three masters with a replica each of\n" +
	"  `.ci/services.sh` (SECKILL_REDIS_CLUSTER_ADDRS), the voucher's stock in 1 bucket or split in 8\n" +
	"  (`stockBuckets`, on slots of different masters).\n" +
	"- The admission script answers in Redis; a consumer writes the orders from the streams afterwards\n" +
	"  (under the `lua` lock, the consumer's, never on the request path). The audit waits until the\n" +
	"  streams have drained, then checks the five invariants, the fifth (Redis stock + orders + pending\n" +
	"  = initial, summed over the buckets; one buyer mark per order) against Redis itself.\n\n" +
	"Columns as above, and: *script* the DUPLICATE_ORDER answers of the admission script (the user's\n" +
	"buyer mark); *unique key* the consumer's unique-key rejections (a duplicate the script let through);\n" +
	"*Redis after the drain* the voucher's Redis stock and buyer marks, summed over its buckets.\n\n" +
	"| Redis | buckets | lock | inst | requests | 200 | SOLD_OUT | DUPLICATE | script | unique key | other codes | oversold | consistent | Redis after the drain | req/s | p50 / p95 / p99 ms | verdict |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

const matrixAsyncReading = "\n### Reading it\n\n" +
	"- The admission script checks the user's buyer mark and takes the mark and a unit in one step of\n" +
	"  one Redis process (the bucket's master on the cluster). With buckets, the mark lives in the\n" +
	"  user's home bucket and is taken there first, as a reservation while the purchase moves to\n" +
	"  another bucket (docs/async.md, \"Stock buckets\"), so a user's purchases at the same instant, on\n" +
	"  one instance or on both, get one 200 and DUPLICATE_ORDER for the rest.\n" +
	"- A run holds when the 200s, the orders and the stock agree (200 orders for 200 units, one per\n" +
	"  user), *script* equals *DUPLICATE*, the consumer's *unique key* is 0 (the script let no duplicate\n" +
	"  through), and Redis after the drain holds no stock in any bucket and as many buyer marks as orders.\n" +
	"- With buckets, more of the refusals are DUPLICATE_ORDER and fewer SOLD_OUT: a user's purchases\n" +
	"  that arrive while the first is moving between buckets meet its reservation.\n"
