// Package faults is `harness faults` (make faults): the fault suite. Each
// case starts two seckill instances on private dependencies, injects one
// fault mid-load, recovers and audits the voucher. It writes
// tools/faults/RESULTS.md and tools/faults/results.json. tools/faults/README.md describes
// the cases and settings. Exit status: 0 all met, 1 one did not, 2 no run.
package faults

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/testkit/proc"
	"seckill/testkit/redisproc"
	"seckill/tools/cmd/harness/testbed"
)

// suite is the fault suite being run.
type suite struct {
	faultSettings
	root, bin, work string
	ports           faultPorts
	db              *testbed.MariaDB
	sqlDB           *sql.DB
	users           []faultUser
	admin           string
	api             *apiClient
	procs           *testbed.ProcGroup
}

func (s *suite) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[faults] "+format+"\n", a...)
}

// Run is `harness faults`.
func Run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	root, err := testbed.ProjectRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[faults] ERROR: %v\n", err)
		return 2
	}
	cfg, err := faultSettingsFrom(os.Getenv, root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "[faults] ERROR: %v\n", err)
		return 2
	}
	cases, _ := selectCases(faultCases, cfg.Cases)
	// The drivers would log every connection a kill breaks and every
	// master the Sentinels name.
	mysql.SetLogger(log.New(io.Discard, "", 0))
	redis.SetLogger(testbed.QuietRedis{})
	// The instances inherit the harness's environment: no SECKILL_
	// variable of the caller's (.ci/env.sh points at the shared services)
	// may reach them.
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "SECKILL_") {
			os.Unsetenv(k)
		}
	}
	s := &suite{faultSettings: cfg, root: root, ports: portsFrom(cfg.BasePort), procs: &testbed.ProcGroup{},
		api: newAPIClient(60 * time.Second)}
	s.work, err = os.MkdirTemp("", "seckill-faults-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "[faults] ERROR: %v\n", err)
		return 2
	}
	defer s.procs.KillAll()
	results, setupErr := s.run(ctx, cases)
	s.procs.KillAll()
	if s.sqlDB != nil {
		s.sqlDB.Close()
	}
	if ctx.Err() != nil {
		s.logf("interrupted: every process stopped; work directory %s", s.work)
		return 130
	}
	if setupErr != nil {
		s.logf("ERROR: %v (work directory kept: %s)", setupErr, s.work)
		return 2
	}
	rep := Report{RunInfo: testbed.NewRunInfo(started, faultsCommand(os.Getenv), faultSettingsText(os.Getenv)), Cases: results}
	rep.Status = exitStatus(results)
	fmt.Println()
	for _, c := range results {
		fmt.Println(faultLine(c))
	}
	out := s.Out
	if len(cfg.Cases) > 0 && os.Getenv("FAULTS_OUT") == "" {
		// One case (or a few) does not replace the full suite's results.
		out = s.work
		s.Keep = true
	}
	if err := os.MkdirAll(out, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(out, "RESULTS.md"), []byte(renderFaultsMarkdown(rep)), 0o644)
		if err == nil {
			err = testbed.WriteJSON(filepath.Join(out, "results.json"), rep)
		}
		if err != nil {
			s.logf("ERROR: cannot write the results: %v", err)
			return 2
		}
	}
	s.logf("%d case(s) in %.0f s; results in %s/RESULTS.md and results.json", len(results), rep.ElapsedS, out)
	if rep.Status != 0 || s.Keep {
		s.logf("work directory (logs, datadir) kept: %s", s.work)
	} else {
		os.RemoveAll(s.work)
	}
	return rep.Status
}

// run prepares the suite (build, private MariaDB, schema, tokens) and runs
// the cases. An error is a suite that could not run.
func (s *suite) run(ctx context.Context, cases []faultCase) ([]CaseResult, error) {
	s.bin = filepath.Join(s.root, "bin/seckill")
	if !s.SkipBuild || !testbed.IsExe(s.bin) {
		s.logf("building bin/seckill")
		if err := testbed.GoBuild(ctx, s.root, "bin/seckill", "."); err != nil {
			return nil, err
		}
	}
	// The layout's ports must be free. When one is taken (someone else's
	// process), the next layouts 100 ports up are tried.
	base, found := s.BasePort, false
	for try := 0; try < 5 && !found; try++ {
		if try > 0 {
			base += 100
		}
		found = portsFrom(base).check() == nil && firstTaken(portsFrom(base)) == 0
	}
	if !found {
		return nil, fmt.Errorf("a port of every layout from FAULTS_BASE_PORT=%d to %d is taken or shared: set another FAULTS_BASE_PORT", s.BasePort, base)
	}
	if base != s.BasePort {
		s.logf("a port of FAULTS_BASE_PORT=%d is taken: using base %d", s.BasePort, base)
	}
	s.ports = portsFrom(base)
	t0 := time.Now()
	db, err := testbed.StartMariaDB(ctx, filepath.Join(s.work, "mariadb"), s.ports.MariaDB)
	if db != nil {
		s.procs.Add(db.Kill)
	}
	if err != nil {
		return nil, err
	}
	s.db = db
	s.logf("private MariaDB on 127.0.0.1:%d ready in %.1f s (datadir %s)", s.ports.MariaDB, time.Since(t0).Seconds(), db.Dir)
	if s.sqlDB, err = testbed.OpenDB(ctx, db.DSN()); err != nil {
		return nil, err
	}
	env := []string{"SECKILL_ENV=development", "SECKILL_MYSQL_DSN=" + db.DSN()}
	if _, err := testbed.RunTool(ctx, 2*time.Minute, filepath.Join(s.work, "migrate.log"), env, s.bin, "migrate"); err != nil {
		return nil, fmt.Errorf("seckill migrate: %v: %s", err, proc.Tail(filepath.Join(s.work, "migrate.log"), 3))
	}
	if err := s.ensureShop(ctx); err != nil {
		return nil, err
	}
	if err := s.makeTokens(ctx, env); err != nil {
		return nil, err
	}
	s.logf("schema applied, %d user tokens and an admin token made; %d case(s): %s", len(s.users), len(cases), caseNames(cases))
	var results []CaseResult
	for _, c := range cases {
		if ctx.Err() != nil {
			break
		}
		s.logf("case %s: %s", c.Name, c.Fault)
		r := s.runCase(ctx, c)
		s.logf("%s", faultLine(r))
		for _, f := range r.Failures {
			s.logf("  FAIL %s: %s", c.Name, f)
		}
		if r.Error != "" {
			s.logf("  ERROR %s: %s", c.Name, r.Error)
		}
		results = append(results, r)
	}
	return results, nil
}

// ensureShop makes shop 1 exist when the schema has shops (a voucher's
// shopId must name one).
func (s *suite) ensureShop(ctx context.Context) error {
	var n int
	if err := s.sqlDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'tb_shop'").Scan(&n); err != nil {
		return fmt.Errorf("look for tb_shop: %w", err)
	}
	if n == 0 {
		return nil
	}
	_, err := s.sqlDB.ExecContext(ctx, "INSERT IGNORE INTO tb_shop (id, name, type_id, address, x, y) VALUES (1, 'fault suite', 1, 'loopback', 0, 0)")
	if err != nil {
		return fmt.Errorf("create shop 1: %w", err)
	}
	return nil
}

// makeTokens writes the user tokens and an admin token (seckill tokens)
// and reads them.
func (s *suite) makeTokens(ctx context.Context, env []string) error {
	logPath := filepath.Join(s.work, "tokens.log")
	users, admin := filepath.Join(s.work, "tokens.csv"), filepath.Join(s.work, "admin.csv")
	for _, args := range [][]string{{"tokens", "--count", strconv.Itoa(s.Users), "--out", users}, {"tokens", "--count", "1", "--admin", "--out", admin}} {
		if _, err := testbed.RunTool(ctx, 2*time.Minute, logPath, env, s.bin, args...); err != nil {
			return fmt.Errorf("seckill %s: %v: %s", strings.Join(args, " "), err, proc.Tail(logPath, 3))
		}
	}
	b, err := os.ReadFile(users)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, tok, ok := strings.Cut(strings.TrimSpace(line), ",")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("%s: bad line %q", users, line)
		}
		s.users = append(s.users, faultUser{ID: n, Token: tok})
	}
	if len(s.users) != s.Users {
		return fmt.Errorf("%s holds %d users, want %d", users, len(s.users), s.Users)
	}
	b, err = os.ReadFile(admin)
	if err != nil {
		return err
	}
	_, s.admin, _ = strings.Cut(strings.TrimSpace(strings.Split(string(b), "\n")[0]), ",")
	if s.admin == "" {
		return fmt.Errorf("%s holds no admin token", admin)
	}
	return nil
}

// caseEnv is what one case runs with: its instances' environment and its
// clients of the private Redis.
type caseEnv struct {
	dir     string
	redis   *redisproc.Server // the main Redis (nil with Sentinel)
	redlock []*redisproc.Server
	sent    *redisproc.Set
	cluster *redisproc.Cluster
	rdb     redis.UniversalClient // the harness's client of the main Redis
	env     []string
	ins     []*testbed.Instance
	killed  map[int]bool // instances the fault killed
	voucher int64
	room    *roomFacts // the waiting room after the fault (Room cases)
}

// privateDeps are the addresses of a case's private dependencies.
type privateDeps struct {
	DSN       string   // the private MariaDB
	Redis     string   // the main Redis ("" with Sentinels)
	Sentinels []string // the private Sentinels
	Master    string   // their master name
	Cluster   []string // the private Redis Cluster's nodes
	Redlock   []string // the private Redlock nodes
}

// deps are the case's private dependencies.
func (s *suite) deps(e *caseEnv) privateDeps {
	d := privateDeps{DSN: s.db.DSN()}
	switch {
	case e.sent != nil:
		d.Sentinels, d.Master = e.sent.SentinelAddrs(), e.sent.MasterName
	case e.cluster != nil:
		d.Cluster = e.cluster.Addrs()
	default:
		d.Redis = e.redis.Addr()
	}
	for _, r := range e.redlock {
		d.Redlock = append(d.Redlock, r.Addr())
	}
	return d
}

// instanceEnv is the instances' environment: every variable that selects a
// dependency is set (empty when unused), so nothing can point them at the
// shared services.
func instanceEnv(c faultCase, d privateDeps) []string {
	env := []string{"SECKILL_MYSQL_DSN=" + d.DSN, "SECKILL_ZK_ADDRS=", "SECKILL_REDIS_CLUSTER_ADDRS=" + strings.Join(d.Cluster, ","),
		"SECKILL_JWT_SECRET=", "SECKILL_LOCK_MODE=" + c.LockMode, "SECKILL_ORDER_MODE=" + c.OrderMode,
		"SECKILL_REDIS_ADDR=" + d.Redis, "SECKILL_REDIS_SENTINEL_ADDRS=" + strings.Join(d.Sentinels, ","),
		"SECKILL_REDIS_MASTER=" + d.Master, "SECKILL_REDLOCK_ADDRS=" + strings.Join(d.Redlock, ",")}
	return append(env, c.Env...)
}

// runCase runs one case: its processes, its load and fault, its audit.
func (s *suite) runCase(ctx context.Context, c faultCase) (r CaseResult) {
	t0 := time.Now()
	r = CaseResult{Name: c.Name, LockMode: c.LockMode, OrderMode: c.OrderMode, Fault: c.Fault, Expectation: c.Expect,
		Status: map[string]int{}, Codes: map[string]int{}}
	e := &caseEnv{dir: filepath.Join(s.work, c.Name), killed: map[int]bool{}}
	r.LogDir = e.dir
	procs := &testbed.ProcGroup{}
	defer func() {
		testbed.StopInstances(e.ins)
		if e.rdb != nil {
			e.rdb.Close()
		}
		procs.KillAll()
		r.ElapsedS = time.Since(t0).Seconds()
		finishVerdict(&r, c.Weak && r.measureOf("breach") == "shown")
	}()
	if err := s.setupCase(ctx, c, e, procs); err != nil {
		r.Error = err.Error()
		return r
	}
	// End the voucher after the case, so that later cases' start-up checks
	// do not work on it.
	defer s.sqlDB.Exec("UPDATE tb_seckill_voucher SET end_time = ? WHERE voucher_id = ?", time.Now().Add(-time.Second), e.voucher)
	r.VoucherID = e.voucher

	plan := loadPlan{Voucher: e.voucher, Users: s.users, Interval: s.Duration / time.Duration(s.Users*s.Dups),
		HoldLimit: 90 * time.Second}
	if c.plan != nil {
		c.plan(s, e, &plan)
	} else {
		plan.Seq = schedule(s.Users, s.Dups, s.Seed)
	}
	plan.Interval = s.Duration / time.Duration(len(plan.Seq))
	if plan.FaultAt == 0 {
		plan.FaultAt = len(plan.Seq) * c.FaultPct / 100
	}
	if c.ReplicaLag {
		plan.Tag += " replica-lag"
	}
	if plan.HoldAt == 0 {
		plan.HoldAt = len(plan.Seq) * 65 / 100
	}
	plan.PayEvery = c.PayEvery
	plan.Room = c.Room
	var faultErr error
	plan.Fault = func(l *loadRun) {
		defer l.recover()
		if err := c.fault(ctx, s, e, l); err != nil {
			faultErr = err
		}
	}
	l := newLoadRun(plan, s.api, testbed.URLs(e.ins))
	shots := l.run(ctx)
	if ctx.Err() != nil {
		r.Error = "interrupted"
		return r
	}
	if faultErr != nil {
		r.Error = "the fault: " + faultErr.Error()
		return r
	}
	for name, at := range l.marks {
		r.Marks = append(r.Marks, mark{name, at.Seconds()})
	}
	sort.Slice(r.Marks, func(i, j int) bool { return r.Marks[i].AtS < r.Marks[j].AtS })
	r.Notes = append(r.Notes, l.notes...)
	r.Measures = append(r.Measures, l.values...)
	if l.held > 100*time.Millisecond {
		r.Notes = append(r.Notes, fmt.Sprintf("the load waited %.1f s for the recovery before its last third", l.held.Seconds()))
	}
	if err := s.audit(ctx, c, e, l, shots, &r); err != nil {
		r.Error = err.Error()
		return r
	}
	return r
}

// setupCase starts the case's Redis servers and instances and publishes
// its voucher.
func (s *suite) setupCase(ctx context.Context, c faultCase, e *caseEnv, procs *testbed.ProcGroup) error {
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	switch {
	case c.Cluster:
		cl, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Dir: e.dir, Replicas: 1})
		if err != nil {
			return fmt.Errorf("private Redis Cluster: %w", err)
		}
		procs.Add(func() { cl.Close() })
		e.cluster = cl
		e.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
			ClusterStateReloadInterval: time.Second})
	case c.Sentinel:
		// A primary, its replica, three Sentinels: quorum 2,
		// down-after-milliseconds 1000, failover-timeout 5000.
		set, err := redisproc.StartSet(ctx, redisproc.SetOptions{Dir: e.dir, MasterName: "faults"})
		if err != nil {
			return fmt.Errorf("private Sentinel set: %w", err)
		}
		procs.Add(func() { set.Close() })
		e.sent = set
		e.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: set.MasterName, SentinelAddrs: set.SentinelAddrs(),
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	default:
		r, err := redisproc.Start(ctx, redisproc.Options{Dir: e.dir})
		if err != nil {
			return fmt.Errorf("private Redis: %w", err)
		}
		procs.Add(func() { r.Close() })
		e.redis = r
		e.rdb = redis.NewClient(&redis.Options{Addr: r.Addr(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	}
	if c.Redlock {
		for range 3 {
			r, err := redisproc.Start(ctx, redisproc.Options{Dir: e.dir})
			if err != nil {
				return fmt.Errorf("private Redlock node: %w", err)
			}
			procs.Add(func() { r.Close() })
			e.redlock = append(e.redlock, r)
		}
	}
	e.env = instanceEnv(c, s.deps(e))
	ins, err := testbed.StartInstances(ctx, testbed.InstanceSpec{Bin: s.bin, BasePort: s.ports.App[0], Count: 2, Env: e.env, LogDir: e.dir})
	if err != nil {
		return err
	}
	e.ins = ins
	e.voucher, err = s.api.publish(ctx, ins[0].URL, s.admin, 1, s.Stock, 15*time.Minute, c.Room)
	return err
}
