// Package loadrun holds the load runs of the harness. They are one experiment
// (`harness loadtest`), the lock-mode matrix (`harness matrix`) and the short
// run of CI (`harness ci`). Each starts seckill instances and drives k6,
// JMeter or the Go driver. Then it audits the voucher and writes a report.
// tools/loadtest/README.md describes the steps and settings.
package loadrun

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/testkit/audit"
	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// allCodes are the response codes the drivers count, in table order.
var allCodes = []string{"OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED",
	"VOUCHER_NOT_FOUND", "INVALID_ARGUMENT", "UNAUTHORIZED", "FORBIDDEN", "RATE_LIMITED", "UNAVAILABLE",
	"INTERNAL", "OTHER", "TRANSPORT"}

// loadtest is one experiment being run.
type loadtest struct {
	ltConfig
	ctx  context.Context
	ins  []*testbed.Instance
	logw io.Writer
}

func (l *loadtest) logf(format string, a ...any) {
	fmt.Fprintf(l.logw, "[loadtest] "+format+"\n", a...)
}

// ltDie is a run that could not be made (exit status 2).
type ltDie struct{ msg string }

// Error is the reason the run stops.
func (e ltDie) Error() string { return e.msg }

// RunLoadtest is `harness loadtest`: one experiment, 1 on a violation, 2
// when the run could not be made.
func RunLoadtest(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testbed.CIRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[loadtest] ERROR: %v\n", err)
		return 2
	}
	cfg, err := ltConfigFromEnv(os.Getenv, root, time.Now())
	if err != nil {
		fmt.Fprintf(os.Stderr, "[loadtest] ERROR: %v\n", err)
		return 2
	}
	l := &loadtest{ltConfig: cfg, ctx: ctx, logw: os.Stderr}
	r, err := l.run()
	testbed.StopInstances(l.ins)
	if ctx.Err() != nil {
		return 130
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "[loadtest] ERROR: %v\n", err)
		return 2
	}
	return r.Status
}

// run makes the experiment. The caller stops the instances.
func (l *loadtest) run() (Result, error) {
	r := Result{Mode: l.Mode, Instances: l.Instances, Setting: l.Setting, LockTTL: l.LockTTL,
		CriticalDelay: l.CriticalDelay, Scenario: l.Scenario, OrderMode: l.OrderMode, Fencing: l.Fencing,
		Redis: map[bool]string{false: "single", true: "cluster"}[l.Cluster], Buckets: atoiOr1(l.Buckets),
		Users: l.Users, Dups: l.Dups, SpacingMS: l.SpacingMS, VUs: l.VUs, Codes: map[string]int64{},
		PayShare: l.PayShare, CancelShare: l.CancelShare, PayTimeout: l.PayTimeout}
	os.Setenv("SECKILL_ENV", "development")
	if err := os.MkdirAll(l.Out, 0o755); err != nil {
		return r, err
	}
	out, err := filepath.Abs(l.Out)
	if err != nil {
		return r, err
	}
	l.Out, r.Out = out, out
	if l.PayTimeout != "" {
		// A short pay timeout: every instance's sweeper expires every
		// unpaid order past it, so the run gets a database of its own.
		dsn, drop, err := ownDatabase(l.ctx, l.MySQLDSN, l.stamp)
		if err != nil {
			return r, err
		}
		defer drop()
		l.MySQLDSN = dsn
		os.Setenv("SECKILL_MYSQL_DSN", dsn)
		l.logf("SECKILL_PAY_TIMEOUT=%s: on a database of its own (%s), dropped at the end", l.PayTimeout, testbed.DbName(dsn))
	}
	db, err := testbed.OpenDB(l.ctx, l.MySQLDSN)
	if err != nil {
		return r, fmt.Errorf("cannot reach MariaDB (SECKILL_MYSQL_DSN): %v", err)
	}
	defer db.Close()
	rdb := testbed.OpenRedis(l.RedisAddr)
	if l.Cluster {
		rdb = redisstore.NewClusterRedisClient(strings.Split(l.ClusterAddrs, ","), redisstore.RedisAuth{})
	}
	defer rdb.Close()

	// Tools.
	if l.Driver == "auto" {
		if l.findK6() {
			l.Driver = "k6"
		} else {
			l.Driver = "go"
		}
		l.logf("DRIVER=auto: using %s", l.Driver)
	}
	r.Driver = l.Driver
	switch l.Driver {
	case "k6":
		err = l.ensureK6()
	case "jmeter":
		err = l.ensureJMeter()
	case "go":
		l.logf("building bin/seckill-load (tools/loadtest/driver)")
		err = testbed.GoBuild(l.ctx, filepath.Join(l.Root, "tools"), filepath.Join(l.Root, "bin/seckill-load"), "./loadtest/driver")
	}
	if err != nil {
		return r, err
	}
	bin := filepath.Join(l.Root, "bin/seckill")
	if !l.SkipBuild || !testbed.IsExe(bin) {
		l.logf("building bin/seckill")
		if err := testbed.GoBuild(l.ctx, l.Root, "bin/seckill", "."); err != nil {
			return r, err
		}
	}

	// Schema, tokens, instances.
	migrateLog := filepath.Join(out, "migrate.log")
	if _, err := testbed.RunTool(l.ctx, 2*time.Minute, migrateLog, []string{"SECKILL_ENV=development"}, bin, "migrate"); err != nil {
		return r, fmt.Errorf("seckill migrate failed: %s", proc.Tail(migrateLog, 3))
	}
	if l.PayTimeout != "" {
		if err := startVoucherIDs(l.ctx, db); err != nil {
			return r, err
		}
	}
	tokensLog := filepath.Join(out, "tokens.log")
	os.Remove(tokensLog)
	if err := testbed.MakeTokens(l.ctx, bin, filepath.Join(out, "tokens.csv"), l.Users, false, tokensLog); err != nil {
		return r, err
	}
	if err := testbed.MakeTokens(l.ctx, bin, filepath.Join(out, "admin.csv"), 1, true, tokensLog); err != nil {
		return r, err
	}
	if n := countLines(filepath.Join(out, "tokens.csv")); n != l.Users {
		return r, fmt.Errorf("tokens.csv does not hold %d lines", l.Users)
	}
	l.ins, err = testbed.StartInstances(l.ctx, testbed.InstanceSpec{Bin: bin, BasePort: l.BasePort, Count: l.Instances, LogDir: out,
		Env: append([]string{"SECKILL_LOCK_MODE=" + l.Mode, "SECKILL_LOCK_TTL=" + l.LockTTL,
			"SECKILL_DEV_CRITICAL_DELAY=" + l.CriticalDelay, "SECKILL_REQUEST_TIMEOUT=" + l.RequestTimeout,
			"SECKILL_ORDER_MODE=" + l.OrderMode, "SECKILL_FENCING=" + l.Fencing, "SECKILL_STOCK_BUCKETS=" + l.Buckets,
			"SECKILL_SYNC_GROUP_COMMIT=" + l.GroupCommit}, append(l.redisEnv(), l.lifeEnv()...)...)})
	if err != nil {
		return r, err
	}
	urls := testbed.URLs(l.ins)
	baseURLs := strings.Join(urls, ",")
	l.logf("redis=%s buckets=%s mode=%s instances=%d (%s) setting=%s ttl=%s delay=%s driver=%s scenario=%s users=%d dups=%d stock=%d vus=%d out=%s",
		r.Redis, l.Buckets, l.Mode, l.Instances, baseURLs, l.Setting, l.LockTTL, l.CriticalDelay, l.Driver, l.Scenario, l.Users, l.Dups, l.Stock, l.VUs, out)

	// The driver.
	t0 := time.Now()
	var d driverRun
	switch l.Driver {
	case "k6":
		d = l.runK6(baseURLs)
	case "jmeter":
		d = l.runJMeter(urls)
	case "go":
		d = l.runGo(baseURLs)
	}
	r.ElapsedS = time.Since(t0).Seconds()
	r.DriverExit = d.exit
	if l.ctx.Err() != nil {
		return r, l.ctx.Err()
	}
	if d.voucher <= 0 {
		l.logf("driver output:")
		fmt.Fprintln(l.logw, lastLinesN(filepath.Join(out, l.Driver+".log"), 20))
		return r, fmt.Errorf("the driver did not publish a voucher (exit %d); see %s", d.exit, out)
	}
	summary, err := testbed.ReadKV(filepath.Join(out, "summary.env"))
	if err != nil {
		return r, fmt.Errorf("the driver wrote no summary (exit %d); see %s/%s.log", d.exit, out, l.Driver)
	}
	r.VoucherID = d.voucher

	// Async orders are written by a consumer: wait until Redis stock and
	// orders agree (the queue has drained), at most 60 s. Then, with
	// SETTLE, wait until every walked-away order expired.
	t1 := time.Now()
	if l.OrderMode == "async" {
		waitQueueDrained(l.ctx, db, rdb, d.voucher, 60*time.Second)
	}
	if l.SettleS > 0 {
		waitSettled(l.ctx, db, rdb, d.voucher, l.OrderMode == "async", time.Duration(l.SettleS)*time.Second)
	}
	r.SettledS = time.Since(t1).Seconds()
	metrics, err := testbed.ScrapeMetrics(urls)
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(out, "metrics.txt"), []byte(metrics), 0o644); err != nil {
		return r, err
	}
	testbed.StopInstances(l.ins)

	// The audit: the shared invariant code over the database and Redis.
	facts, err := audit.ReadDB(l.ctx, db, d.voucher)
	if err != nil {
		return r, err
	}
	facts.Announced, facts.CheckAnnounced = d.announced, true
	r.Invariant5 = "n/a"
	var redisErr error
	if l.OrderMode == "async" {
		// The queue has drained: nothing is pending.
		facts.Async, redisErr = audit.ReadRedis(l.ctx, rdb, d.voucher)
		if redisErr == nil {
			r.Invariant5 = fmt.Sprintf("redis stock %d, buyers %d", facts.Async.RedisStock, *facts.Async.Buyers)
		} else {
			r.Invariant5 = "redis unreadable: " + redisErr.Error()
		}
	}
	r.Violations = facts.Violations()
	if redisErr != nil {
		r.Violations = append(r.Violations, model.Violation{Invariant: 5, Msg: redisErr.Error()})
	}
	c := facts.Counts()
	r.InitialStock, r.StockLeft, r.Orders, r.DistinctUsers = c.InitialStock, c.Stock, c.Orders, c.DistinctUsers
	if r.DupRejAudit, err = audit.DuplicateRejections(l.ctx, rdb, d.voucher); err != nil {
		r.DupRejAudit = 0
	}
	t, err := testbed.ReadExpiryTally(l.ctx, db, d.voucher)
	if err != nil {
		return r, err
	}
	r.Unpaid, r.Paid, r.Expired, r.Cancelled, r.GivebackDue = t.Unpaid, t.Paid, t.Expired, t.Cancelled, t.GivebackDue
	r.SoldAgain = max(0, t.Unpaid+t.Paid+t.Expired+t.Cancelled-r.InitialStock)
	r.SoldTwice = max(0, r.StockLeft+t.Unpaid+t.Paid-r.InitialStock)
	if facts.Async != nil {
		r.SoldTwice = max(r.SoldTwice, facts.Async.RedisStock+t.Unpaid+t.Paid+t.GivebackDue-r.InitialStock)
	}
	if l.life() {
		r.Life = map[string]int64{}
		for k, v := range summary {
			if name, ok := strings.CutPrefix(k, "life_"); ok {
				r.Life[name] = int64(atofOr0(v))
			}
		}
	}

	// The report.
	r.Requests = int64(atofOr0(summary["purchases"]))
	r.RPS, r.P50ms, r.P95ms, r.P99ms = toNumber(summary["rps"]), toNumber(summary["p50_ms"]), toNumber(summary["p95_ms"]), toNumber(summary["p99_ms"])
	for _, code := range allCodes {
		r.Codes[code] = int64(atofOr0(summary["code_"+code]))
	}
	r.UniqueKey = testbed.MetricSum(metrics, "seckill_unique_key_rejections_total", "")
	r.LockRefused = testbed.MetricSum(metrics, "seckill_lock_not_obtained_total", "")
	r.ServerOK = testbed.MetricSum(metrics, "seckill_seckill_outcomes_total", `code="OK"`)
	r.ServerDup = testbed.MetricSum(metrics, "seckill_seckill_outcomes_total", `code="DUPLICATE_ORDER"`)
	notes := judge(&r, l.Slow, l.AllowBreach, l.Matrix)
	table := renderTable(r)
	fmt.Print(table)
	if err := os.WriteFile(filepath.Join(out, "report.txt"), []byte(table), 0o644); err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(out, "result.env"), []byte(resultEnv(r)), 0o644); err != nil {
		return r, err
	}
	for _, n := range notes {
		l.logf("%s", n)
	}
	if err := testbed.WriteJSON(filepath.Join(out, "results.json"), r); err != nil {
		return r, err
	}
	return r, nil
}

// ownDatabase creates an empty database next to the one of dsn and
// returns its DSN and a function that drops it. The schema comes later
// (seckill migrate), then startVoucherIDs.
func ownDatabase(ctx context.Context, dsn, stamp string) (string, func(), error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("SECKILL_MYSQL_DSN: %v", err)
	}
	admin, err := testbed.OpenDB(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("cannot reach MariaDB (SECKILL_MYSQL_DSN): %v", err)
	}
	name := fmt.Sprintf("seckill_lt_%s_%d", strings.ReplaceAll(stamp, "-", "_"), rand.IntN(1_000_000))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create database %s: %v", name, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin.ExecContext(dctx, "DROP DATABASE IF EXISTS "+name)
		admin.Close()
	}
	cfg.DBName = name
	return cfg.FormatDSN(), drop, nil
}

// startVoucherIDs makes a fresh database's voucher ids start at a random
// number, so that its vouchers' Redis keys are not the shared database's.
func startVoucherIDs(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE tb_voucher AUTO_INCREMENT = %d", 1_000_000+rand.Int64N(1<<40)))
	if err != nil {
		return fmt.Errorf("voucher ids of the run's database: %v", err)
	}
	return nil
}

// waitQueueDrained polls until the async queue has drained, or the limit
// passes. Drained means nothing pending: the voucher's Redis stock, its live
// orders and the give-backs due add up to its initial stock.
func waitQueueDrained(ctx context.Context, db *sql.DB, rdb redis.UniversalClient, voucher int64, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		if testbed.Drained(ctx, db, rdb, voucher) {
			return
		}
	}
}

// waitSettled polls until no order of the voucher is unpaid and no
// give-back is due (and, async, the queue has drained), or limit passes.
func waitSettled(ctx context.Context, db *sql.DB, rdb redis.UniversalClient, voucher int64, async bool, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		t, err := testbed.ReadExpiryTally(ctx, db, voucher)
		if err == nil && t.Unpaid == 0 && t.GivebackDue == 0 && (!async || testbed.Drained(ctx, db, rdb, voucher)) {
			return
		}
	}
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	return strings.Count(string(b), "\n")
}

func lastLinesN(path string, n int) string {
	return strings.ReplaceAll(proc.Tail(path, n), " | ", "\n")
}

func atofOr0(s string) float64 {
	f, err := strconv.ParseFloat(string(toNumber(s)), 64)
	if err != nil {
		return 0
	}
	return f
}

// atoiOr1 is a bucket count as BUCKETS gave it (1 when it is not a number).
func atoiOr1(s string) int {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 {
		return n
	}
	return 1
}

// redisName names a run's Redis (ltResult.Redis) for a table.
func redisName(kind string) string {
	if kind == "cluster" {
		return "the Redis Cluster"
	}
	return "one Redis"
}
