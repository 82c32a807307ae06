package lockrun

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"seckill/cmd/harness/testbed"
	"seckill/internal/faultproxy"
	"seckill/internal/lockcheck"
	"seckill/internal/proc"
	"seckill/internal/redisproc"
	"seckill/lock"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
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

// lcFaults are the faults, in the order of the table.
var lcFaults = []string{"none", "pause", "partition-lock", "partition-db", "latency", "cut-lock", "redlock-restart", "failover"}

// lcFaultModes limits a fault to the modes it means something for.
var lcFaultModes = map[string][]string{
	"redlock-restart": {"redsync", "multi"},
	"failover":        {"simple", "owner", "lua", "reentrant"},
}

// lcTokenModes mint fencing tokens; only they have fenced rows.
var lcTokenModes = []string{"lua", "reentrant", "multi", "zookeeper"}

// LcRow is one row of lock-check/results.json.
type LcRow struct {
	Mode               string `json:"mode"`
	Fault              string `json:"fault"`
	Fencing            bool   `json:"fencing"`
	Operations         int    `json:"operations"`
	MutexViolations    int    `json:"mutexViolations"`
	RegisterViolations int    `json:"registerViolations"`
	Undecided          int    `json:"undecided,omitempty"`
	Verdict            string `json:"verdict"`
	// History is the saved checker page of a violation (the register's
	// when the register was violated), relative to lock-check/.
	History string `json:"history,omitempty"`
	// MutexHistory is the mutex's page when History is the register's.
	MutexHistory string `json:"mutexHistory,omitempty"`
	Error        string `json:"error,omitempty"`
}

// LcReport is lock-check/results.json.
type LcReport struct {
	Date     string   `json:"date"`
	Command  string   `json:"command"`
	Machine  string   `json:"machine"`
	Settings []string `json:"settings"`
	ElapsedS float64  `json:"elapsedS"`
	Rows     []LcRow  `json:"rows"`
}

// verdictOf names a row's outcome.
func verdictOf(r LcRow) string {
	switch {
	case r.Error != "":
		return "error"
	case r.RegisterViolations > 0:
		return "fails"
	case r.MutexViolations > 0 && r.Fencing:
		return "fenced"
	case r.MutexViolations > 0:
		return "lock fails"
	case r.Undecided > 0:
		return "undecided"
	}
	return "holds"
}

// lcMustHold says whether the row is one that must hold: the fenced
// register of every token mode, and mysql's session lock, under pause and
// partition. CI fails when such a row shows a violation.
func lcMustHold(r LcRow) bool {
	if r.Fault != "pause" && r.Fault != "partition-lock" && r.Fault != "none" {
		return false
	}
	return (r.Fencing && slices.Contains(lcTokenModes, r.Mode)) || r.Mode == "mysql"
}

// lcBroken is the reason a must-hold row broke its promise, or "".
func lcBroken(r LcRow) string {
	if !lcMustHold(r) {
		return ""
	}
	switch {
	case r.Error != "":
		return "error: " + r.Error
	case r.RegisterViolations > 0:
		return fmt.Sprintf("%d register violation(s)", r.RegisterViolations)
	case r.Mode == "mysql" && r.MutexViolations > 0:
		return fmt.Sprintf("%d mutex violation(s)", r.MutexViolations)
	case r.Undecided > 0:
		return "undecided"
	}
	return ""
}

// lcEnv is what every row shares: the private servers and the work dir.
type lcEnv struct {
	work     string
	self     string
	maria    *testbed.PrivateMariaDB
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

// runLockCheck runs modes x faults x fencing (LOCKCHECK_MODES,
// LOCKCHECK_FAULTS narrow it; LOCKCHECK_CI=1 runs the must-hold subset)
// and writes lock-check/RESULTS.md and results.json.
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
		out := testbed.EnvOr("LOCKCHECK_OUT", filepath.Join(root, "lock-check"))
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
	e := &lcEnv{logf: logf, out: testbed.EnvOr("LOCKCHECK_OUT", filepath.Join(root, "lock-check"))}
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
	rep := LcReport{Date: started.UTC().Format("2006-01-02 15:04 UTC"), Command: lcCommand(ci), Machine: testbed.Machine(),
		Settings: lcSettingsText(), ElapsedS: time.Since(started).Seconds(), Rows: rows}
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

// readLockCheck reads a results.json.
func readLockCheck(path string) (LcReport, error) {
	var rep LcReport
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal(b, &rep)
}

// mergeLockCheck puts the rows of a narrowed run into an earlier report:
// a row of the same mode, fault and fencing is replaced, a new one is
// added, and the rows keep the order of the full plan.
func mergeLockCheck(old, run LcReport) LcReport {
	key := func(r LcRow) string { return fmt.Sprintf("%s|%s|%v", r.Mode, r.Fault, r.Fencing) }
	byKey := map[string]LcRow{}
	for _, r := range old.Rows {
		byKey[key(r)] = r
	}
	for _, r := range run.Rows {
		byKey[key(r)] = r
	}
	var rows []LcRow
	for _, r := range lcPlan("", "", false) {
		if got, ok := byKey[key(r)]; ok {
			rows = append(rows, got)
			delete(byKey, key(r))
		}
	}
	for _, r := range append(old.Rows, run.Rows...) { // rows outside the plan, in their order
		if got, ok := byKey[key(r)]; ok {
			rows = append(rows, got)
			delete(byKey, key(r))
		}
	}
	out := run
	out.Rows = rows
	out.Command = old.Command + "; then " + run.Command
	out.ElapsedS = old.ElapsedS + run.ElapsedS
	return out
}

func lcCommand(ci bool) string {
	if ci {
		return "make lock-check-ci"
	}
	c := "make lock-check"
	for _, k := range []string{"LOCKCHECK_MODES", "LOCKCHECK_FAULTS"} {
		if v := os.Getenv(k); v != "" {
			c = k + "=" + v + " " + c
		}
	}
	return c
}

func lcSettingsText() []string {
	return []string{
		fmt.Sprintf("%d client processes x %d clients, %d users (lock:order:<userId>)", lcProcesses, lcClients, lcUsers),
		fmt.Sprintf("lease %v, operation timeout %v, work between read and write up to %v", lcTTL, lcOpTimeout, lcWorkMax),
		fmt.Sprintf("warm-up %v, one fault on process 0 (%v, zookeeper %v), tail %v", lcWarmup, lcFaultLen("lua"), lcFaultLen("zookeeper"), lcTail),
		"private MariaDB (the register, and mysql's GET_LOCK), private redis-servers (1 + 3 Redlock nodes, and a Sentinel set per failover row), the shared ZooKeeper",
		"every link of a client process through its own fault proxy",
	}
}

// lcPlan lists the rows: every mode x fault, fencing off, and fencing on
// for the token modes; CI keeps the must-hold rows under pause and
// partition.
func lcPlan(modes, faults string, ci bool) []LcRow {
	ms, fs := lock.Modes, lcFaults
	if modes != "" {
		ms = strings.Split(modes, ",")
	}
	if faults != "" {
		fs = strings.Split(faults, ",")
	}
	var rows []LcRow
	for _, m := range ms {
		for _, f := range fs {
			for _, fencing := range []bool{false, true} {
				r := LcRow{Mode: m, Fault: f, Fencing: fencing}
				if fencing && !slices.Contains(lcTokenModes, m) {
					continue
				}
				if only, ok := lcFaultModes[f]; ok && !slices.Contains(only, m) {
					continue
				}
				if ci && (!lcMustHold(r) || f == "none") {
					continue
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// lcFaultLen is how long a pause or partition lasts: three leases, and
// past ZooKeeper's smallest session timeout (two ticks of 2 s) for it.
func lcFaultLen(mode string) time.Duration {
	if mode == "zookeeper" {
		return 8 * time.Second
	}
	return 3 * lcTTL
}

func (e *lcEnv) setup(ctx context.Context) error {
	port, err := lcFreePort()
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

// lcFreePort is a free local TCP port.
func lcFreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
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
func (e *lcEnv) row(ctx context.Context, r LcRow) LcRow {
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
func (e *lcEnv) workload(ctx context.Context, r LcRow, dir string) ([]lockcheck.Op, error) {
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
func (e *lcEnv) start(r LcRow, dir string, i int, users []int64) (*lcProc, error) {
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
	p.sup = &proc.Proc{Name: "lockcheck-client", Args: []string{e.self, "lockcheck-client", cfgPath}, Out: logPath, Attr: testbed.ChildAttr()}
	return p, p.sup.Start()
}

// fault waits for the warm-up, applies the row's fault to process 0, and
// waits for the tail.
func (e *lcEnv) fault(ctx context.Context, r LcRow, p *lcProc) error {
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.sup.Exited():
			return errors.New("client process 0 exited early")
		case <-time.After(d):
			return nil
		}
	}
	if err := sleep(lcWarmup); err != nil {
		return err
	}
	n := lcFaultLen(r.Mode)
	var err error
	switch r.Fault {
	case "none":
		err = sleep(n)
	case "pause":
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(n):
		}
		if cerr := p.sup.Signal(syscall.SIGCONT); cerr != nil {
			return cerr
		}
	case "partition-lock", "partition-db":
		links := p.lockLink
		if r.Fault == "partition-db" {
			links = p.dbLink
		}
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		for _, l := range links {
			l.Partition()
		}
		if err = p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		err = sleep(n)
		for _, l := range links {
			l.Heal()
		}
	case "cut-lock":
		// A reset of the holder's connections to the lock service: a
		// GET_LOCK session ends with its connection; a Redis or ZooKeeper
		// client reconnects.
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		for _, l := range p.lockLink {
			l.Cut()
		}
		if err = p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		err = sleep(n)
	case "redlock-restart":
		// One Redlock node of three restarted empty while a holder of
		// process 0 holds its lock on all three.
		if err = e.stopHolding(ctx, p); err != nil {
			return err
		}
		node := e.redlock[1]
		if err = node.Kill(); err == nil {
			err = node.Restart(ctx, "")
		}
		if cerr := p.sup.Signal(syscall.SIGCONT); err == nil {
			err = cerr
		}
		if err == nil {
			err = sleep(n)
		}
	case "failover":
		err = e.failover(ctx, p)
		if err == nil {
			err = sleep(lcTail)
		}
	case "latency":
		// Mostly small delays, and now and then one past half a lease.
		for _, l := range p.links() {
			l.SetDelay(func() time.Duration {
				if mrand.IntN(10) == 0 {
					return lcTTL/2 + time.Duration(mrand.Int64N(int64(lcTTL)))
				}
				return time.Duration(mrand.Int64N(int64(20 * time.Millisecond)))
			})
		}
		err = sleep(n)
		for _, l := range p.links() {
			l.SetDelay(nil)
		}
	default:
		return fmt.Errorf("unknown fault %q (want one of %s)", r.Fault, strings.Join(lcFaults, ", "))
	}
	if err != nil {
		return err
	}
	return sleep(lcTail)
}

// failover loses a grant in a Sentinel failover, under a live holder: the
// replica stops applying the replication stream (CLIENT PAUSE WRITE), a
// process-0 client obtains a lock and is stopped holding it, the primary
// is killed, the replica drops the unapplied grant with its link and is
// promoted; once process 1 works on the new primary, the holder resumes.
func (e *lcEnv) failover(ctx context.Context, p *lcProc) error {
	primary, err := e.set.Primary(ctx)
	if err != nil {
		return err
	}
	var replica *redisproc.Server
	for _, s := range e.set.Servers {
		if s != primary {
			replica = s
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if err := rc.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		return fmt.Errorf("CLIENT PAUSE WRITE on the replica: %w", err)
	}
	time.Sleep(100 * time.Millisecond) // grants from here on stay unapplied
	if err := e.stopHolding(ctx, p); err != nil {
		return err
	}
	if err := primary.Kill(); err != nil {
		return err
	}
	if err := waitLinkDown(ctx, replica); err != nil {
		return err
	}
	if err := rc.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		return fmt.Errorf("CLIENT UNPAUSE on the replica: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.set.WaitPrimary(wctx, replica); err != nil {
		return err
	}
	time.Sleep(lcTTL) // process 1 takes locks on the new primary
	return p.sup.Signal(syscall.SIGCONT)
}

// waitLinkDown polls until the replica reports its primary link down.
func waitLinkDown(ctx context.Context, replica *redisproc.Server) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := redisproc.Info(ctx, replica.Addr(), "replication")
		if err == nil && info["master_link_status"] == "down" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s: master link not down (%v)", replica.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopHolding stops process p (SIGSTOP) at a moment one of its clients
// holds a lock, as its history shows: stopped, it records nothing more.
// After a bounded number of tries it leaves p stopped anyway.
func (e *lcEnv) stopHolding(ctx context.Context, p *lcProc) error {
	for try := 0; ; try++ {
		if err := p.sup.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if try >= 100 || holding(p.out) || ctx.Err() != nil {
			return nil
		}
		if err := p.sup.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		time.Sleep(time.Duration(5+mrand.IntN(20)) * time.Millisecond)
	}
}

// holding reads the end of a history and reports whether a client's last
// acquire succeeded with no release after it.
func holding(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	const tail = 32 << 10
	off := max(0, st.Size()-tail)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	held := map[int]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		var op lockcheck.Op
		if json.Unmarshal([]byte(line), &op) != nil {
			continue // the first line may be cut
		}
		switch {
		case op.Kind == lockcheck.KindAcquire && op.Outcome == lockcheck.OK:
			held[op.Client] = true
		case op.Kind == lockcheck.KindRelease:
			held[op.Client] = false
		}
	}
	for _, h := range held {
		if h {
			return true
		}
	}
	return false
}

// stopAll ends the client processes: SIGCONT and SIGTERM (they finish the
// cycle under way), then SIGKILL after a bound.
func (e *lcEnv) stopAll(procs []*lcProc) {
	for _, p := range procs {
		if p.sup == nil {
			continue
		}
		_ = p.sup.Signal(syscall.SIGCONT) // it may have exited
		_ = p.sup.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if p.sup == nil || p.sup.Exited() == nil {
			continue
		}
		select {
		case <-p.sup.Exited():
		case <-time.After(4*lcOpTimeout + 10*time.Second):
			_ = p.sup.Kill(0)
		}
	}
}
