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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/tools/cmd/harness/testbed"
)

// Package bench is `harness bench` (make bench): in one run it measures
// the machine's limits and the seckill against them. It writes
// tools/bench/RESULTS.md and tools/bench/results.json beside it. The runs, targets and
// BENCH_* settings are described in docs/bench-harness.md.

// serverUnderTest starts, meters and stops the seckill server.
type serverUnderTest struct{ *bench }

// limitRuns measures the machine's limits: Redis, MariaDB and the no-op route.
type limitRuns struct{ *bench }

// seckillRuns measures the seckill in each mode and audits each run.
type seckillRuns struct{ *bench }

// costTables measures the cost per command and the Redis Cluster block.
type costTables struct{ *bench }

// reporter turns the figures into RESULTS.md and results.json.
type reporter struct{ *bench }

// newBench is a bench with empty figures and its method sets wired.
func newBench(root string) *bench {
	b := &bench{root: root, figures: &figures{runs: map[string]benchFigures{}},
		profiles: map[string]chan bool{}, info: map[string]string{}}
	b.serverUnderTest, b.limitRuns, b.seckillRuns = serverUnderTest{b}, limitRuns{b}, seckillRuns{b}
	b.costTables, b.reporter = costTables{b}, reporter{b}
	return b
}

// benchDie is the panic of bench.die: the bench cannot go on (exit 2).
type benchDie struct{ msg string }

// bench is one run of the benchmark: its settings, connections and every
// figure measured so far.
type bench struct {
	// The method sets by concern. Each reaches the run's state through
	// its *bench.
	serverUnderTest
	limitRuns
	seckillRuns
	costTables
	reporter

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
	// The Redis Cluster block (cluster.go): the nodes measured (their
	// CPU is the Redis CPU of a run while nodePIDs is set) and its runs.
	nodePIDs      []int
	clusterNodes_ []clusterNode
	clusterRows   []string
	// The per-command figures (cost.go): the nodes of the current
	// run, their first reading, and every measured run.
	costNodes  []costNode
	costBefore []nodeStats
	costSince  time.Time
	costs      []*costRun

	*figures
	rows       []string // seckill runs in table order
	k6Runs     []string
	profiled   []string
	profiledK6 []string
	disturbed  []string
	vouchers   []int64

	adminToken, firstUser string
	half                  int
	server                *testbed.Instance
	second                *testbed.Instance // the -x2 runs' second instance (startSecond)
	profiles              map[string]chan bool
	slapVoucher           int64
	admitLoaded           bool
	admitV                int64
	cleaned               bool
	admission             *admissionProfile // BENCH_ADMISSION_PROFILE's profiles, once saved

	// machine and verdict figures of RESULTS.md
	info map[string]string
}

func (b *bench) logf(format string, a ...any) { logf(format, a...) }

// logf prints one line of the bench's progress on stderr.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[bench] %s\n", fmt.Sprintf(format, a...))
}

func (b *bench) die(format string, a ...any) {
	panic(benchDie{fmt.Sprintf(format, a...)})
}

// Run is `harness bench`: 0 when every check passed, 1 on a violation
// (RESULTS.md written), 2 when the bench could not run.
func Run(args []string) (code int) {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: harness bench (settings: the BENCH_* variables, see docs/bench-harness.md)")
		return 2
	}
	root, err := testbed.ProjectRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[bench] ERROR: %v\n", err)
		return 2
	}
	b := newBench(root)
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
	// for. The bench needs development: /debug/noop, pprof, and tokens
	// signed with the public development secret the server also uses.
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

// writeTokens writes tokens-0.csv, tokens-1.csv, tokens-async.csv and
// admin.csv. The first two are halves of the users, alternated from run to
// run. A run's unanswered requests may still hold their user's lock when wrk
// stops. The next run should not meet those users. The async runs share
// tokens-async.csv: their vouchers are their own, and they leave no lock
// behind.
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
