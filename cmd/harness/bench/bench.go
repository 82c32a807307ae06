package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"seckill/cmd/harness/testbed"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// `harness bench` (make bench): measures, in ONE run, the limits of this
// machine and the seckill against them, then writes bench/RESULTS.md
// (machine, date, exact commands, tables, ratios, targets) and
// bench/results.json beside it (the same figures, for tools).
//
// Limits (what the service cannot beat on this machine):
//   noop     wrk on GET /debug/noop: the same gin stack and auth middleware
//            (JWT check) as the seckill route, no business work;
//   acquire  redis-benchmark EVALSHA of lua/acquire.lua (SET NX PX + fencing
//            INCR), a fresh random key per call;
//   release  redis-benchmark EVALSHA of lua/unlock.lua (compare-and-delete) on
//            keys written beforehand, so that most calls delete;
//   admit    redis-benchmark EVALSHA of lua/seckill.lua (async admission) with
//            the service's key shapes on a scratch voucher (huge stock, window
//            open) and a scratch stream (bench:stream.orders, which the
//            service's consumers never read), a random user and order id per
//            call; everything removed afterwards; depth 1 (no -P);
//   admit-P<d>  the same with -P <d>, run right after the async-<first async
//            lock mode> run: <d> is the mean pipelining depth that run's
//            server used (admissions per round trip to Redis: its /metrics,
//            seckill_admission_pipeline_size sum ÷ count, the run's figure
//            pipeline_mean; an admission sent alone counts 1), rounded, at
//            least 1. The server coalesces concurrent admissions into
//            pipelines (repository/admit_batch.go: up to 64 per pipeline, 2
//            round trips in flight), so "async ÷ EVALSHA" compares it with
//            this row, not with depth 1 (kept in the limits table);
//   slap     mariadb-slap of the order transaction (BEGIN; stock UPDATE;
//            order INSERT; COMMIT) on a scratch voucher with huge stock;
//   insert   mariadb-slap of a single-row order INSERT (autocommit), the
//            partner of the async consumers' drain rate.
// Runs of the service (wrk, bench/rotate.lua: every request a new user):
//   soldout            a voucher of stock 1 already sold: every request 409 SOLD_OUT;
//   sync-<lock>        for each lock mode of BENCH_LOCK_MODES, stock far above
//                      the request count: every request creates an order
//                      (concurrent buyers committed together: group commit);
//   sync-<lock>-pertxn right after the first lock mode's run: the same with
//                      SECKILL_SYNC_GROUP_COMMIT=off (one transaction per
//                      order, the course's path); RESULTS.md compares both
//                      with slap (req/s, p99, mean group size from
//                      seckill_sync_group_size, CPU per order);
//   async-<lock>       the same in async mode (SECKILL_ORDER_MODE=async) for
//                      each lock mode of BENCH_ASYNC_LOCK_MODES (the lock is
//                      only the consumers' second line of defence); after the
//                      load, the drain: how long the consumers take until the
//                      database holds every admitted order, and their rate;
//   async-<lock>-nodrain  right after the first async lock mode's run: the
//                      same admission on a fresh voucher, with the same
//                      tokens, by a server whose consumers do not write during
//                      the load (SECKILL_DEV_CONSUMER_DELAY longer than the
//                      load: each consumer holds the batch it read); then that
//                      server stops (SIGTERM ends the consumer's sleep at
//                      once), a normal async server drains the backlog (after
//                      a load longer than the batch timeout, 8 s, it claims
//                      the batch the first one held after SECKILL_CLAIM_IDLE,
//                      30 s), and the audit. The target "admission with
//                      the consumers writing ÷ without them ≥ 0.8" (the drain
//                      may slow admission by at most 20 %) divides async-<lock>
//                      req/s by this run's;
//   async-<lock>-limits, async-<lock>-traced  right after the -nodrain run:
//                      the async-<lock> run with every purchase limit on and
//                      none reached (limitsNotHit), then with tracing on at
//                      a 1 % sample (tracedAt1Percent, console exporter to
//                      the server's log); their cost is their req/s ÷
//                      async-<lock>'s (target for the limits: ≥ 0.9);
//   k6-async-<lock>    k6, constant arrival rate at half the sync `lua` req/s
//                      (bench/arrival.js, a new user per request): latency.
// After every run the voucher is audited (admin audit endpoint, and the
// database and Redis directly, judged by model.Counts: the invariants of
// docs/contract.md as the tests judge them; in async mode after the drain,
// with invariant 5) and the client's counts are checked against what the
// run must produce; any violation makes the command exit 1 after writing
// RESULTS.md. A missed ratio target is reported in RESULTS.md, with a CPU
// profile, not failed. Exit 2: the bench could not run.
//
// Settings (environment or make variables), defaults in brackets:
//   BENCH_DURATION [10]   seconds per wrk run (and per k6 run)
//   BENCH_THREADS [2]     wrk threads
//   BENCH_CONNS [32]      wrk connections = redis-benchmark clients = mariadb-slap
//                         clients = k6 pre-allocated VUs
//   BENCH_USERS [200000]  user tokens of the sync runs, in two halves that the
//                         runs alternate (each request spends one of its half)
//   BENCH_ASYNC_USERS [400000]  user tokens of the async runs (each run has its
//                         own voucher, so the runs share them: a user is a
//                         duplicate only on the same voucher, and a drained
//                         run leaves no per-user lock behind). Each wrk run
//                         must not spend more than its file: an async run did
//                         16,000 req/s (160,000 requests in 10 s) on 2 cores on
//                         2026-11-23, and a reused token is a DUPLICATE_ORDER
//                         refusal, reported as a violation
//   BENCH_SKIP_USERS [5000]  the first users are left out: tests and load tests
//                         use the low user ids (and their lock:order:<id> keys)
//   BENCH_ORDER_MODES [sync async]  sync first: the async targets are ratios to
//                         the sync `lua` run
//   BENCH_LOCK_MODES [lua none local simple owner reentrant redsync multi mysql zookeeper]
//                         sync runs (lua first: it runs right after mariadb-slap,
//                         its ratio partner)
//   BENCH_ASYNC_LOCK_MODES [lua]  async runs
//   BENCH_K6_RATE []      k6 arrivals per second; empty = half the sync `lua` req/s
//   BENCH_DRAIN_TIMEOUT [120]  seconds the consumers get to drain after a run
//                         (from the end of the load; the -nodrain run's drain
//                         needs more than the 30 s of SECKILL_CLAIM_IDLE)
//   BENCH_REDIS_N [150000] redis-benchmark requests per script
//   BENCH_SLAP_TXNS [500] transactions (rows) per mariadb-slap client
//   BENCH_PORT [18181]    the server's port on 127.0.0.1
//   BENCH_PROFILE []      run names to CPU-profile (e.g. "sync-lua soldout");
//                         the profile and its `go tool pprof -top` land in the out dir
//   BENCH_ADMISSION_PROFILE [1]  1 = profile the async admission run (async-<first
//                         async lock mode>) itself: a CPU profile over its middle (as
//                         BENCH_PROFILE) and the server's allocations during the wrk
//                         run (/debug/pprof/allocs before and after), saved with their
//                         top 20 in the profiles dir and RESULTS.md (issue 13), and the
//                         same CPU profile of its -nodrain partner (not kept: so that
//                         their ratio compares like with like); 0 = not (the runs'
//                         figures then carry no profiler cost at all)
//   BENCH_LIMITS []       the -limits run's settings instead of limitsNotHit
//                         (e.g. "SECKILL_RATE_LIMIT_VOUCHER=100000000" alone)
//   BENCH_OUT [bench/out/<date>]  logs, wrk outputs, profiles
//   BENCH_RESULTS [bench/RESULTS.md]  (results.json is written beside it, the
//                         admission profiles in profiles/ beside it)
//   BENCH_KEEP [0]        1 = keep the bench vouchers and their orders
//   BENCH_BIN []          a prebuilt seckill binary to measure instead of building
//                         the working tree (to compare two builds)
//   BENCH_ONLY []         cluster = only async-lua on one Redis, on a Redis with a
//                         replica and the Redis Cluster block, with COMMANDS.md
//                         (bench_cost.go): a quick measure of the cluster's cost
//   BENCH_CLUSTER_LOCK [lua]  lock mode of the cluster block, its one-Redis partners
//                         and COMMANDS.md (none: the cost without the consumers'
//                         per-user locks)

// benchConfig is the BENCH_* settings.
type benchConfig struct {
	Duration, Threads, Conns, Users, AsyncUsers, SkipUsers int
	DrainTimeout, RedisN, SlapTxns, Port                   int
	LockModes, OrderModes, AsyncLockModes                  []string
	K6Rate                                                 string
	Profile                                                string // grows by the extra profiled runs
	ProfileSetting                                         string // BENCH_PROFILE as given
	Out, Results                                           string
	Keep                                                   bool
	Bin                                                    string
	AdmissionProfile                                       bool
	Only                                                   string // BENCH_ONLY
}

// benchConfigFromEnv reads the BENCH_* variables with bench/run.sh's
// defaults; getenv is os.Getenv outside the tests.
func benchConfigFromEnv(getenv func(string) string, root string, now time.Time) (benchConfig, error) {
	def := func(k, d string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return d
	}
	c := benchConfig{
		LockModes:      strings.Fields(def("BENCH_LOCK_MODES", "lua none local simple owner reentrant redsync multi mysql zookeeper")),
		OrderModes:     strings.Fields(def("BENCH_ORDER_MODES", "sync async")),
		AsyncLockModes: strings.Fields(def("BENCH_ASYNC_LOCK_MODES", "lua")),
		K6Rate:         getenv("BENCH_K6_RATE"),
		Profile:        getenv("BENCH_PROFILE"),
		ProfileSetting: getenv("BENCH_PROFILE"),
		Out:            def("BENCH_OUT", filepath.Join(root, "bench", "out", now.Format("20060102-150405"))),
		Results:        def("BENCH_RESULTS", filepath.Join(root, "bench", "RESULTS.md")),
		Keep:           getenv("BENCH_KEEP") == "1",
		Bin:            getenv("BENCH_BIN"),
		Only:           getenv("BENCH_ONLY"),
	}
	if c.Only != "" && c.Only != "cluster" {
		return c, fmt.Errorf("BENCH_ONLY=%s: the only block to run alone is cluster", c.Only)
	}
	c.AdmissionProfile = def("BENCH_ADMISSION_PROFILE", "1") != "0"
	ints := []struct {
		name string
		def  string
		dst  *int
	}{
		{"DURATION", "10", &c.Duration}, {"THREADS", "2", &c.Threads}, {"CONNS", "32", &c.Conns},
		{"USERS", "200000", &c.Users}, {"ASYNC_USERS", "400000", &c.AsyncUsers},
		{"REDIS_N", "150000", &c.RedisN}, {"SLAP_TXNS", "500", &c.SlapTxns}, {"PORT", "18181", &c.Port},
		{"SKIP_USERS", "5000", &c.SkipUsers}, {"DRAIN_TIMEOUT", "120", &c.DrainTimeout},
	}
	for _, v := range ints {
		s := def("BENCH_"+v.name, v.def)
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || strings.Trim(s, "0123456789") != "" || (n == 0 && v.name != "SKIP_USERS") {
			return c, fmt.Errorf("BENCH_%s=%s is not a positive number", v.name, s)
		}
		*v.dst = n
	}
	if c.Conns < c.Threads {
		return c, fmt.Errorf("BENCH_CONNS (%d) must be at least BENCH_THREADS (%d)", c.Conns, c.Threads)
	}
	if c.K6Rate != "" {
		if n, err := strconv.Atoi(c.K6Rate); err != nil || n <= 0 || strings.Trim(c.K6Rate, "0123456789") != "" || c.K6Rate[0] == '0' {
			return c, fmt.Errorf("BENCH_K6_RATE=%s is not a positive number", c.K6Rate)
		}
	}
	for _, om := range c.OrderModes {
		if om != "sync" && om != "async" {
			return c, fmt.Errorf("BENCH_ORDER_MODES: unknown order mode %s (sync, async)", om)
		}
	}
	return c, nil
}

// admissionRun is the run whose profiles BENCH_ADMISSION_PROFILE asks for:
// the async run of the first async lock mode ("" when there is none).
func (c benchConfig) admissionRun() string {
	if !c.AdmissionProfile || !c.wantAsync() || len(c.AsyncLockModes) == 0 {
		return ""
	}
	return "async-" + c.AsyncLockModes[0]
}

// profilesDir is where the admission profiles go: profiles/ beside
// BENCH_RESULTS (bench/profiles by default).
func (c benchConfig) profilesDir() string {
	return filepath.Join(filepath.Dir(c.Results), "profiles")
}

func (c benchConfig) wantAsync() bool {
	for _, om := range c.OrderModes {
		if om == "async" {
			return true
		}
	}
	return false
}

// benchDie is the panic of bench.die: the bench cannot go on (exit 2).
type benchDie struct{ msg string }

// bench is one run of the benchmark: its settings, connections and every
// figure measured so far.
type bench struct {
	cfg  benchConfig
	root string
	ctx  context.Context
	db   *sql.DB
	rdb  redis.UniversalClient

	dbUser, dbPass, dbHost, dbPort, dbName string
	redisHost, redisPort                   string
	base                                   string
	bin, build, k6, k6ver, slap            string
	hz                                     float64
	mariadbPID, redisPID                   int
	// The Redis Cluster block (bench_cluster.go): the nodes measured (their
	// CPU is the Redis CPU of a run while nodePIDs is set) and its runs.
	nodePIDs      []int
	clusterNodes_ []clusterNode
	clusterRows   []string
	// The per-command figures (bench_cost.go): the nodes of the current
	// run, their first reading, and every measured run.
	costNodes  []costNode
	costBefore []nodeStats
	costs      []*costRun

	// runs holds the figures of every run and limit by name.
	mu         sync.Mutex
	runs       map[string]benchFigures
	rows       []string // seckill runs in table order
	k6Runs     []string
	profiled   []string
	profiledK6 []string
	violations []string
	disturbed  []string
	commands   []string
	vouchers   []int64

	adminToken, firstUser string
	half                  int
	server                *testbed.Instance
	profiles              map[string]chan bool
	slapVoucher           int64
	admitLoaded           bool
	admitV                int64
	cleaned               bool
	admission             *admissionProfile // BENCH_ADMISSION_PROFILE's profiles, once saved

	// machine and verdict figures of RESULTS.md
	info map[string]string
}

func (b *bench) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[bench] %s\n", fmt.Sprintf(format, a...))
}

func (b *bench) die(format string, a ...any) {
	panic(benchDie{fmt.Sprintf(format, a...)})
}

func (b *bench) get(run, k string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[run][k]
}

func (b *bench) put(run, k, v string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs[run] == nil {
		b.runs[run] = benchFigures{}
	}
	b.runs[run][k] = v
}

func (b *bench) putAll(run string, f benchFigures) {
	for k, v := range f {
		b.put(run, k, v)
	}
}

func (b *bench) violate(run, msg string) {
	b.violations = append(b.violations, run+": "+msg)
	b.logf("VIOLATION %s: %s", run, msg)
}

func (b *bench) noteCmd(s string) { b.commands = append(b.commands, s) }

// runBench is `harness bench`: 0 when every check passed, 1 on a violation
// (RESULTS.md written), 2 when the bench could not run.
func Run(args []string) (code int) {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: harness bench (settings: the BENCH_* variables, see cmd/harness/bench.go)")
		return 2
	}
	root, err := testbed.ProjectRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[bench] ERROR: %v\n", err)
		return 2
	}
	b := &bench{root: root, runs: map[string]benchFigures{}, profiles: map[string]chan bool{}, info: map[string]string{}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	b.ctx = ctx
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		b.logf("%v: cleaning up", s)
		b.cleanup()
		os.Exit(130)
	}()
	defer signal.Stop(sigs)
	defer func() {
		r := recover()
		b.cleanup()
		if r == nil {
			return
		}
		d, ok := r.(benchDie)
		if !ok {
			panic(r)
		}
		fmt.Fprintf(os.Stderr, "[bench] ERROR: %s\n", d.msg)
		code = 2
	}()
	b.setup()
	b.measure()
	return b.report()
}

// setup checks the settings and the tools, connects to MariaDB and Redis,
// builds the server and writes the tokens.
func (b *bench) setup() {
	if err := os.Chdir(b.root); err != nil {
		b.die("%v", err)
	}
	// Real MariaDB and Redis mean production unless development is asked
	// for: the bench needs it (/debug/noop, pprof, and tokens signed with
	// the public development secret that the server also uses).
	os.Setenv("SECKILL_ENV", "development")
	os.Setenv("PATH", "/usr/local/go/bin:"+os.Getenv("PATH"))
	cfg, err := benchConfigFromEnv(os.Getenv, b.root, time.Now())
	if err != nil {
		b.die("%v", err)
	}
	b.cfg = cfg
	for _, t := range []string{"wrk", "redis-benchmark", "go"} {
		if _, err := exec.LookPath(t); err != nil {
			b.die("%s is missing (Debian: wrk, redis-tools, mariadb-client; Go in /usr/local/go)", t)
		}
	}
	if p, err := exec.LookPath("mariadb-slap"); err == nil {
		b.slap = p
	} else if p, err := exec.LookPath("mysqlslap"); err == nil {
		b.slap = p
	} else {
		b.die("mariadb-slap (or mysqlslap) is missing: apt-get install mariadb-client")
	}
	if cfg.wantAsync() {
		b.k6 = benchFindK6(b)
	}
	if err := testbed.LoadCIEnv(b.root); err != nil {
		b.die("%v", err)
	}
	dsn, raddr := os.Getenv("SECKILL_MYSQL_DSN"), os.Getenv("SECKILL_REDIS_ADDR")
	if dsn == "" {
		b.die("SECKILL_MYSQL_DSN is empty: the bench needs the real MariaDB (see .ci/env.sh)")
	}
	if raddr == "" {
		b.die("SECKILL_REDIS_ADDR is empty: the bench needs the real Redis (see .ci/env.sh)")
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		b.die("%v", err)
	}
	if abs, err := filepath.Abs(cfg.Out); err == nil {
		b.cfg.Out = abs
	}
	if abs, err := filepath.Abs(cfg.Results); err == nil {
		b.cfg.Results = abs
	}
	b.base = fmt.Sprintf("http://127.0.0.1:%d", cfg.Port)

	mc, err := mysql.ParseDSN(dsn)
	if err != nil || mc.Net != "tcp" || mc.DBName == "" {
		b.die("SECKILL_MYSQL_DSN: cannot read user, host and database from it")
	}
	b.dbUser, b.dbPass, b.dbName = mc.User, mc.Passwd, mc.DBName
	b.dbHost, b.dbPort = mc.Addr, "3306"
	if h, p, ok := strings.Cut(mc.Addr, ":"); ok {
		b.dbHost, b.dbPort = h, p
	}
	b.db, err = testbed.OpenDB(b.ctx, dsn)
	if err != nil {
		b.die("cannot reach MariaDB at %s:%s as %s: %v", b.dbHost, b.dbPort, b.dbUser, err)
	}
	b.db.SetMaxOpenConns(4)
	b.redisHost, b.redisPort = raddr, "6379"
	if i := strings.LastIndex(raddr, ":"); i >= 0 {
		b.redisHost, b.redisPort = raddr[:i], raddr[i+1:]
	}
	b.rdb = testbed.OpenRedis(raddr)
	if err := b.rdb.Ping(b.ctx).Err(); err != nil {
		b.die("cannot reach Redis at %s: %v", raddr, err)
	}

	b.hz = 100
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, ok := figNum(strings.TrimSpace(string(out))); ok && v > 0 {
			b.hz = v
		}
	}
	b.mariadbPID = benchPidOf("mariadbd", "mysqld")
	if info, err := b.rdb.Info(b.ctx, "server").Result(); err == nil {
		b.redisPID, _ = strconv.Atoi(infoField(info, "process_id"))
	}
	b.costNodes = costNodesOf(b.ctx, raddr, "redis")
	b.buildServer()
	b.writeTokens()
}

// findK6 is k6 on PATH or in ~/go/bin, installed with go install when missing.
func benchFindK6(b *bench) string {
	if p, err := exec.LookPath("k6"); err == nil {
		return p
	}
	home, _ := os.UserHomeDir()
	if p := filepath.Join(home, "go", "bin", "k6"); benchIsExec(p) {
		return p
	}
	b.logf("k6 is missing: go install go.k6.io/k6@v1.8.1")
	cmd := exec.Command("go", "install", "go.k6.io/k6@v1.8.1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		b.die("installing k6 failed")
	}
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "k6")
	if !benchIsExec(p) {
		b.die("k6 is missing (%s)", p)
	}
	return p
}

func benchIsExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// infoField reads one field of a Redis INFO text.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), field+":"); ok {
			return v
		}
	}
	return ""
}

// pidOf is the smallest pid of a process called one of names (0: none).
func benchPidOf(names ...string) int {
	ents, _ := os.ReadDir("/proc")
	for _, name := range names {
		best := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
			if err == nil && strings.TrimSpace(string(comm)) == name && (best == 0 || pid < best) {
				best = pid
			}
		}
		if best != 0 {
			return best
		}
	}
	return 0
}

// output runs a command and returns its trimmed stdout ("" on failure).
func benchOutput(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil && len(out) == 0 {
		return ""
	}
	return strings.TrimSpace(string(out))
}

var shortSHA = regexp.MustCompile(`^[0-9a-f]+$`)

// buildServer builds the working tree (or takes BENCH_BIN).
func (b *bench) buildServer() {
	if b.cfg.Bin != "" {
		abs, _ := filepath.Abs(b.cfg.Bin)
		if !benchIsExec(abs) {
			b.die("BENCH_BIN=%s is not an executable", b.cfg.Bin)
		}
		b.bin = abs
		b.logf("using the prebuilt %s", abs)
		b.noteCmd("# prebuilt server binary: BENCH_BIN=" + abs)
		b.build = "prebuilt: " + abs
		return
	}
	b.bin = filepath.Join(b.cfg.Out, "seckill")
	b.logf("building %s", b.bin)
	if err := testbed.GoBuild(b.ctx, b.root, b.bin, "."); err != nil {
		b.die("%v", err)
	}
	b.noteCmd("go build -o " + b.bin + " .")
	rev := benchOutput("git", "rev-parse", "--short", "HEAD")
	if !shortSHA.MatchString(rev) {
		rev = "?"
	}
	b.build = "the working tree at " + rev
	st := benchOutput("git", "status", "--porcelain", "--untracked-files=no", "--", "*.go", "*.lua", "*.sql", "go.mod", "go.sum")
	if st != "" {
		b.build += fmt.Sprintf(", with %d uncommitted Go/Lua/SQL files", len(strings.Split(st, "\n")))
	}
}

// writeTokens writes tokens-0.csv and tokens-1.csv (two halves, alternated
// from run to run: the requests a run leaves unanswered when wrk stops may
// still be working inside their user's lock, and the next run should not
// meet those users), tokens-async.csv (the async runs' vouchers are their
// own and they leave no lock behind: they share it) and admin.csv.
func (b *bench) writeTokens() {
	c := b.cfg
	all := c.SkipUsers + max(c.Users, c.AsyncUsers)
	b.logf("writing %d user tokens (the first %d left out) and one admin token", all, c.SkipUsers)
	logPath := filepath.Join(c.Out, "tokens.log")
	allFile := filepath.Join(c.Out, "tokens-all.csv")
	if err := testbed.MakeTokens(b.ctx, b.bin, allFile, all, false, logPath); err != nil {
		b.die("%v", err)
	}
	if err := testbed.MakeTokens(b.ctx, b.bin, filepath.Join(c.Out, "admin.csv"), 1, true, logPath); err != nil {
		b.die("%v", err)
	}
	data, err := os.ReadFile(allFile)
	if err != nil {
		b.die("%v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	slice := func(from, to int) string { // lines from+1..to (1-based, inclusive)
		from, to = min(from, len(lines)), min(to, len(lines))
		return strings.Join(lines[from:to], "")
	}
	half := c.SkipUsers + c.Users/2
	for name, body := range map[string]string{
		"tokens-0.csv":     slice(c.SkipUsers, half),
		"tokens-1.csv":     slice(half, c.SkipUsers+c.Users),
		"tokens-async.csv": slice(c.SkipUsers, c.SkipUsers+c.AsyncUsers),
	} {
		if err := os.WriteFile(filepath.Join(c.Out, name), []byte(body), 0o644); err != nil {
			b.die("%v", err)
		}
	}
	os.Remove(allFile)
	b.noteCmd(fmt.Sprintf("%s tokens --count %d --out tokens-all.csv; %s tokens --count 1 --admin --out admin.csv", b.bin, all, b.bin))
	b.noteCmd(fmt.Sprintf("# tokens-0.csv: lines %d..%d of tokens-all.csv; tokens-1.csv: lines %d..%d; tokens-async.csv: lines %d..%d",
		c.SkipUsers+1, half, half+1, c.SkipUsers+c.Users, c.SkipUsers+1, c.SkipUsers+c.AsyncUsers))
	admin, err := os.ReadFile(filepath.Join(c.Out, "admin.csv"))
	if err != nil {
		b.die("%v", err)
	}
	b.adminToken = csvToken(string(admin))
	b.firstUser = csvToken(slice(half, half+1))
	if b.adminToken == "" || b.firstUser == "" {
		b.die("no tokens in %s", c.Out)
	}
}

// csvToken is the token of the first userId,token line.
func csvToken(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	_, tok, _ := strings.Cut(strings.TrimSpace(line), ",")
	return tok
}
