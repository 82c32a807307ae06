// Package lockrun is `harness lockcheck` (make lock-check): client
// processes take each lock mode's locks under faults and record their
// histories, which tools/internal/lockcheck checks for linearizability. It
// writes tools/lock-check/RESULTS.md and results.json. docs/locks.md explains it.
package lockrun

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/testkit/faultproxy"
	"seckill/testkit/proc"
	"seckill/testkit/redisproc"
	"seckill/tools/cmd/harness/testbed"
	"seckill/tools/internal/lockcheck"
)

// The lock-check workload: two client processes of three clients each,
// three users, a one-second lease. The fault hits process 0 only.
const (
	lcProcesses = 2
	lcClients   = 3
	lcUsers     = 3
	lcTTL       = time.Second
	lcOpTimeout = 2 * time.Second
	lcWorkMax   = 30 * time.Millisecond
	lcWarmup    = 2 * time.Second
	lcTail      = 2 * time.Second
	lcCheckTime = 30 * time.Second // the checker's budget per key and model
)

// lcEnv is what every row shares: the private servers and the work dir.
type lcEnv struct {
	work     string
	self     string
	maria    *testbed.MariaDB
	db       *sql.DB
	redis    *redisproc.Server
	redlock  []*redisproc.Server
	zk       []string
	out      string
	logf     func(string, ...any)
	rowCount int
	keep     bool           // leave the work directory for a look at a failure
	set      *redisproc.Set // the row's Sentinel set (failover rows)
}

// Run runs modes x faults x fencing (LOCKCHECK_MODES,
// LOCKCHECK_FAULTS narrow it; LOCKCHECK_CI=1 runs the must-hold subset)
// and writes tools/lock-check/RESULTS.md and results.json.
func Run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "[lock-check] "+format+"\n", a...) }
	root, err := testbed.ProjectRoot()
	if err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	if len(args) == 1 && args[0] == "render" {
		// RESULTS.md again from results.json, after a change of its text.
		out := testbed.EnvOr("LOCKCHECK_OUT", filepath.Join(root, "tools", "lock-check"))
		rep, err := readLockCheck(filepath.Join(out, "results.json"))
		if err == nil {
			err = os.WriteFile(filepath.Join(out, "RESULTS.md"), []byte(renderLockCheck(rep)), 0o644)
		}
		if err != nil {
			logf("ERROR: %v", err)
			return 2
		}
		return 0
	}
	if err := testbed.LoadCIEnv(root); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	mysql.SetLogger(log.New(io.Discard, "", 0))
	redis.SetLogger(testbed.QuietRedis{})
	ci := os.Getenv("LOCKCHECK_CI") == "1"
	rows := lcPlan(os.Getenv("LOCKCHECK_MODES"), os.Getenv("LOCKCHECK_FAULTS"), ci)
	e := &lcEnv{logf: logf, out: testbed.EnvOr("LOCKCHECK_OUT", filepath.Join(root, "tools", "lock-check"))}
	if ci && os.Getenv("LOCKCHECK_OUT") == "" {
		e.out = ""
	}
	if e.self, err = os.Executable(); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	if e.work, err = os.MkdirTemp("", "seckill-lockcheck-"); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	defer e.close()
	if err := e.setup(ctx); err != nil {
		e.keep = true
		logf("ERROR: setup: %v (work directory kept: %s)", err, e.work)
		return 2
	}
	if e.out == "" {
		e.out = filepath.Join(e.work, "out")
	}
	narrowed := os.Getenv("LOCKCHECK_MODES") != "" || os.Getenv("LOCKCHECK_FAULTS") != ""
	if !narrowed && !ci {
		// A full run replaces every page: none of an earlier run may stay.
		if err := os.RemoveAll(filepath.Join(e.out, "histories")); err != nil {
			logf("ERROR: %v", err)
			return 2
		}
	}
	if err := os.MkdirAll(filepath.Join(e.out, "histories"), 0o755); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	for i := range rows {
		if ctx.Err() != nil {
			return 130
		}
		rows[i] = e.row(ctx, rows[i])
		r := rows[i]
		logf("%-9s %-14s fencing=%-5v ops=%-5d mutex=%-3d register=%-3d %s %s", r.Mode, r.Fault, r.Fencing,
			r.Operations, r.MutexViolations, r.RegisterViolations, r.Verdict, r.Error)
	}
	rep := Report{RunInfo: testbed.NewRunInfo(started, lcCommand(ci), lcSettingsText()), Rows: rows}
	if narrowed && !ci {
		if old, err := readLockCheck(filepath.Join(e.out, "results.json")); err == nil {
			rep = mergeLockCheck(old, rep)
		}
	}
	if err := os.WriteFile(filepath.Join(e.out, "RESULTS.md"), []byte(renderLockCheck(rep)), 0o644); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	if err := testbed.WriteJSON(filepath.Join(e.out, "results.json"), rep); err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	logf("%d row(s) in %.0f s; results in %s", len(rows), rep.ElapsedS, e.out)
	status := 0
	for _, r := range rows {
		if why := lcBroken(r); why != "" {
			logf("FAIL: %s under %s (fencing %v) must hold: %s", r.Mode, r.Fault, r.Fencing, why)
			status = 1
		}
	}
	if status != 0 {
		e.keep = true
		logf("work directory (histories, client logs, pages) kept: %s", e.work)
	}
	return status
}

func (e *lcEnv) setup(ctx context.Context) error {
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	e.logf("starting a private MariaDB on port %d, four private redis-servers", port)
	if e.maria, err = testbed.StartMariaDB(ctx, filepath.Join(e.work, "mariadb"), port); err != nil {
		return err
	}
	if e.db, err = testbed.OpenDB(ctx, e.maria.DSN()); err != nil {
		return err
	}
	if _, err := e.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS lockcheck_register ("+
		"user_id BIGINT PRIMARY KEY, value BIGINT NOT NULL, token BIGINT NOT NULL)"); err != nil {
		return err
	}
	for i := range 4 {
		s, err := redisproc.Start(ctx, redisproc.Options{Dir: filepath.Join(e.work, "redis")})
		if err != nil {
			return err
		}
		if i == 0 {
			e.redis = s
		} else {
			e.redlock = append(e.redlock, s)
		}
	}
	if z := os.Getenv("SECKILL_ZK_ADDRS"); z != "" {
		e.zk = strings.Split(z, ",")
	}
	return nil
}

func (e *lcEnv) close() {
	if e.db != nil {
		e.db.Close()
	}
	if e.maria != nil {
		e.maria.Kill()
	}
	for _, s := range append([]*redisproc.Server{e.redis}, e.redlock...) {
		if s != nil {
			_ = s.Close() // the work directory goes with them
		}
	}
	if !e.keep {
		os.RemoveAll(e.work)
	}
}

// lcProc is one client process and the proxies of its links.
type lcProc struct {
	sup      *proc.Proc
	out      string
	lockLink []*faultproxy.Proxy
	dbLink   []*faultproxy.Proxy
}

func (p *lcProc) links() []*faultproxy.Proxy { return append(slices.Clone(p.lockLink), p.dbLink...) }

// row runs one row: fresh users, the client processes, the fault, the
// checker.
func (e *lcEnv) row(ctx context.Context, r Row) Row {
	if r.Mode == "zookeeper" && len(e.zk) == 0 {
		r.Error = "no ZooKeeper (SECKILL_ZK_ADDRS)"
		r.Verdict = verdictOf(r)
		return r
	}
	e.rowCount++
	dir := filepath.Join(e.work, fmt.Sprintf("row-%d", e.rowCount))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Error = err.Error()
		r.Verdict = verdictOf(r)
		return r
	}
	if r.Fault == "failover" {
		set, err := redisproc.StartSet(ctx, redisproc.SetOptions{Dir: filepath.Join(dir, "sentinel")})
		if err != nil {
			r.Error = err.Error()
			r.Verdict = verdictOf(r)
			return r
		}
		e.set = set
		defer func() { _ = set.Close(); e.set = nil }() // the row's own processes
	}
	ops, err := e.workload(ctx, r, dir)
	if err != nil {
		r.Error = err.Error()
		r.Verdict = verdictOf(r)
		return r
	}
	r.Operations = len(ops)
	mv := lockcheck.CheckMutex(ops, lcCheckTime)
	rv := lockcheck.CheckRegister(ops, lcCheckTime)
	r.MutexViolations, r.RegisterViolations, r.Undecided = mv.Violations, rv.Violations, mv.TimedOut+rv.TimedOut
	name := fmt.Sprintf("%s-%s-fencing-%s", r.Mode, r.Fault, map[bool]string{false: "off", true: "on"}[r.Fencing])
	page := func(v lockcheck.Verdict, model string) string {
		if v.Shortest == nil {
			return ""
		}
		rel := filepath.Join("histories", name+"-"+model+".html")
		if err := v.WritePage(filepath.Join(e.out, rel), lcCheckTime); err != nil {
			e.logf("cannot write %s: %v", rel, err)
			return ""
		}
		return rel
	}
	mp, rp := page(mv, "mutex"), page(rv, "register")
	if rp != "" {
		r.History, r.MutexHistory = rp, mp
	} else {
		r.History = mp
	}
	r.Verdict = verdictOf(r)
	return r
}

// workload runs the client processes with the row's fault on process 0
// and returns every operation they recorded.
func (e *lcEnv) workload(ctx context.Context, r Row, dir string) ([]lockcheck.Op, error) {
	users := make([]int64, lcUsers)
	base := 1_000_000_000 + mrand.Int64N(1_000_000_000)
	for i := range users {
		users[i] = base + int64(i)
		if _, err := e.db.ExecContext(ctx, "INSERT INTO lockcheck_register (user_id, value, token) VALUES (?, 0, 0)", users[i]); err != nil {
			return nil, err
		}
	}
	var procs []*lcProc
	defer func() {
		for _, p := range procs {
			for _, l := range p.links() {
				l.Close()
			}
		}
	}()
	for i := range lcProcesses {
		p, err := e.start(r, dir, i, users)
		if p != nil {
			procs = append(procs, p)
		}
		if err != nil {
			e.stopAll(procs)
			return nil, err
		}
	}
	faultErr := e.fault(ctx, r, procs[0])
	e.stopAll(procs)
	if faultErr != nil {
		return nil, faultErr
	}
	var ops []lockcheck.Op
	for i, p := range procs {
		if code := p.sup.ExitCode(); code > 0 {
			return nil, fmt.Errorf("client process %d exited %d: %s", i, code, proc.Tail(filepath.Join(dir, fmt.Sprintf("client-%d.log", i)), 3))
		}
		h, err := lockcheck.ReadFile(p.out)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w (log %s)", i, err, proc.Tail(filepath.Join(dir, fmt.Sprintf("client-%d.log", i)), 3))
		}
		ops = append(ops, h...)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operation recorded (logs in %s)", dir)
	}
	return ops, nil
}

// start starts client process i behind its own proxies.
func (e *lcEnv) start(r Row, dir string, i int, users []int64) (*lcProc, error) {
	p := &lcProc{out: filepath.Join(dir, fmt.Sprintf("history-%d.jsonl", i))}
	link := func(target string, lockSide bool) (string, error) {
		px, err := faultproxy.Start(target)
		if err != nil {
			return "", err
		}
		if lockSide {
			p.lockLink = append(p.lockLink, px)
		} else {
			p.dbLink = append(p.dbLink, px)
		}
		return px.Addr(), nil
	}
	maria := "127.0.0.1:" + strconv.Itoa(e.maria.Port)
	dsn := func(addr string) string {
		return "seckill:seckill@tcp(" + addr + ")/seckill?timeout=2s&readTimeout=3s&writeTimeout=3s"
	}
	cfg := lcClientConfig{Process: i, Clients: lcClients, ClientBase: i * lcClients, Mode: r.Mode, Fencing: r.Fencing,
		TTL: lcTTL, OpTimeout: lcOpTimeout, WorkMax: lcWorkMax, Users: users, Out: p.out}
	a, err := link(maria, false)
	if err != nil {
		return p, err
	}
	// Rows matched, not rows changed: a write of the value already there
	// still counts as applied.
	cfg.RegisterDSN = dsn(a) + "&clientFoundRows=true"
	switch r.Mode {
	case "simple", "owner", "lua", "reentrant":
		if r.Fault == "failover" {
			// Straight to the Sentinels and the primary they name.
			cfg.SentinelAddrs, cfg.MasterName = e.set.SentinelAddrs(), e.set.MasterName
			break
		}
		if cfg.RedisAddr, err = link(e.redis.Addr(), true); err != nil {
			return p, err
		}
	case "redsync", "multi":
		for _, s := range e.redlock {
			a, err := link(s.Addr(), true)
			if err != nil {
				return p, err
			}
			cfg.RedlockAddrs = append(cfg.RedlockAddrs, a)
		}
	case "mysql":
		a, err := link(maria, true)
		if err != nil {
			return p, err
		}
		cfg.LockDSN = dsn(a)
	case "zookeeper":
		for _, z := range e.zk {
			a, err := link(z, true)
			if err != nil {
				return p, err
			}
			cfg.ZKAddrs = append(cfg.ZKAddrs, a)
		}
	}
	cfgPath := filepath.Join(dir, fmt.Sprintf("client-%d.json", i))
	if err := testbed.WriteJSON(cfgPath, cfg); err != nil {
		return p, err
	}
	logPath := filepath.Join(dir, fmt.Sprintf("client-%d.log", i))
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return p, err
	}
	// The exit status is in the log.
	p.sup = &proc.Proc{Name: "lockcheck-client", Args: []string{e.self, "lockcheck-client", cfgPath}, Out: logPath, Attr: proc.TermWithParent()}
	return p, p.sup.Start()
}
