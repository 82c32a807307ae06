package loadrun

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"seckill/cmd/harness/testbed"
	auditdb "seckill/internal/audit"
	"seckill/internal/proc"
	"seckill/model"
	"seckill/repository"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// harness loadtest: one flash-sale experiment, end to end (make loadtest).
//
//  1. builds bin/seckill, applies the schema, makes USERS user tokens and one
//     admin token (seckill tokens);
//  2. starts INSTANCES processes on 127.0.0.1:BASE_PORT.. on the real MariaDB
//     and Redis of .ci/env.sh, with lock mode MODE;
//  3. runs the scenario with k6 (loadtest/k6/seckill.js), JMeter
//     (DRIVER=jmeter: loadtest/jmeter/seckill.jmx) or the Go driver
//     (DRIVER=go: loadtest/driver); the driver publishes the voucher and
//     buys it;
//  4. audits the voucher by reading the database and Redis directly
//     (internal/audit) and judging the five invariants of docs/contract.md
//     with model.Facts, the fourth against the order ids of the 200 responses
//     the driver recorded; reads the unique-key rejections and lock refusals
//     from every instance's /metrics;
//  5. prints the table (OUT/report.txt), writes OUT/result.env and
//     OUT/results.json, and exits 1 on any violation, unless MATRIX=1
//     (designs that are expected to break report, not fail); 2 when the run
//     could not be made. The instances are always stopped.
//
// Settings (environment), defaults in brackets: see loadtest/README.md.

// allCodes are the response codes the drivers count, in table order.
var allCodes = []string{"OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED",
	"VOUCHER_NOT_FOUND", "INVALID_ARGUMENT", "UNAUTHORIZED", "FORBIDDEN", "RATE_LIMITED", "UNAVAILABLE",
	"INTERNAL", "OTHER", "TRANSPORT"}

// ltConfig is one experiment's settings.
type ltConfig struct {
	Root                                   string
	Mode, Driver, Scenario, OrderMode      string
	Fencing, Setting, Out                  string
	LockTTL, CriticalDelay, RequestTimeout string
	Instances, BasePort, Users, Dups, VUs  int
	SpacingMS, Stock                       int
	Slow, Matrix, AllowBreach, SkipBuild   bool
	K6, JMeterHome, MySQLDSN, RedisAddr    string
	// Cluster: REDIS=cluster, the instances on the Redis Cluster of
	// SECKILL_TEST_CLUSTER_ADDRS (.ci/env.sh) instead of SECKILL_REDIS_ADDR.
	Cluster      bool
	ClusterAddrs string
	// Buckets: BUCKETS, the servers' SECKILL_STOCK_BUCKETS (async mode: the
	// voucher's Redis stock split in that many buckets).
	Buckets string
	// GroupCommit: GROUP_COMMIT (on), the servers'
	// SECKILL_SYNC_GROUP_COMMIT. The matrix turns it off: one process's
	// group committer serialises a voucher's commits, which would hide
	// what a weak lock lets through.
	GroupCommit string
	// The order's life: PAY_SHARE and CANCEL_SHARE of the buyers pay or
	// cancel, the rest walk away; PAY_TIMEOUT is the servers'
	// SECKILL_PAY_TIMEOUT; SETTLE (seconds) bounds the wait for every
	// walked-away order to expire before the audit.
	PayShare, CancelShare float64
	PayTimeout            string
	SettleS               int
	stamp                 string
}

// life says whether buyers pay or cancel after a purchase.
func (c ltConfig) life() bool { return c.PayShare+c.CancelShare > 0 }

// ltConfigFromEnv reads the settings (the former loadtest/run.sh's).
func ltConfigFromEnv(getenv func(string) string, root string, now time.Time) (ltConfig, error) {
	get := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	c := ltConfig{Root: root,
		Mode: get("MODE", "lua"), Driver: get("DRIVER", "k6"), Scenario: get("SCENARIO", "burst"),
		OrderMode: get("ORDER_MODE", "sync"), Fencing: get("FENCING", "off"),
		Slow: get("SLOW", "0") == "1", Matrix: get("MATRIX", "0") == "1", SkipBuild: get("SKIP_BUILD", "0") == "1",
		K6: getenv("K6"), JMeterHome: get("JMETER_HOME", "/usr/share/jmeter"),
		MySQLDSN: getenv("SECKILL_MYSQL_DSN"), RedisAddr: getenv("SECKILL_REDIS_ADDR"),
	}
	c.AllowBreach = get("ALLOW_BREACH", get("MATRIX", "0")) == "1"
	redisKind := get("REDIS", "single")
	c.Cluster, c.ClusterAddrs = redisKind == "cluster", getenv("SECKILL_TEST_CLUSTER_ADDRS")
	c.Buckets = get("BUCKETS", "1")
	c.GroupCommit = get("GROUP_COMMIT", "on")
	c.PayTimeout = getenv("PAY_TIMEOUT")
	for _, sh := range []struct {
		name string
		dst  *float64
	}{{"PAY_SHARE", &c.PayShare}, {"CANCEL_SHARE", &c.CancelShare}} {
		v, err := strconv.ParseFloat(get(sh.name, "0"), 64)
		if err != nil || v < 0 || v > 1 {
			return c, fmt.Errorf("%s=%s is not a share between 0 and 1", sh.name, getenv(sh.name))
		}
		*sh.dst = v
	}
	users := get("USERS", "300")
	var stock string
	if c.Slow {
		c.Setting = "slow"
		c.LockTTL, c.CriticalDelay = get("LOCK_TTL", "1s"), get("CRITICAL_DELAY", "2500ms")
		c.RequestTimeout, stock = get("REQUEST_TIMEOUT", "15s"), get("STOCK", users)
	} else {
		c.Setting = "normal"
		c.LockTTL, c.CriticalDelay = get("LOCK_TTL", "10s"), get("CRITICAL_DELAY", "0s")
		c.RequestTimeout, stock = get("REQUEST_TIMEOUT", "3s"), get("STOCK", "200")
	}
	spacing := get("SPACING_MS", map[bool]string{true: "600", false: "0"}[c.Slow])
	nums := []struct {
		name string
		val  string
		dst  *int
	}{{"INSTANCES", get("INSTANCES", "2"), &c.Instances}, {"USERS", users, &c.Users}, {"DUPS", get("DUPS", "4"), &c.Dups},
		{"VUS", get("VUS", "40"), &c.VUs}, {"BASE_PORT", get("BASE_PORT", "18081"), &c.BasePort},
		{"SPACING_MS", spacing, &c.SpacingMS}, {"STOCK", stock, &c.Stock}, {"SETTLE", get("SETTLE", "0"), &c.SettleS}}
	digits := regexp.MustCompile(`^[0-9]+$`)
	for _, n := range nums {
		v, err := strconv.Atoi(n.val)
		if !digits.MatchString(n.val) || err != nil {
			return c, fmt.Errorf("%s=%s is not a number", n.name, n.val)
		}
		*n.dst = v
	}
	c.stamp = now.Format("20060102-150405")
	c.Out = get("OUT", filepath.Join(root, "loadtest/out", fmt.Sprintf("%s-%s-%d-%s", c.stamp, c.Mode, c.Instances, c.Setting)))
	switch {
	case c.Instances < 1 || c.Instances > 16:
		return c, fmt.Errorf("INSTANCES=%d: 1 to 16", c.Instances)
	case c.Users < 1 || c.Dups < 1 || c.Stock < 1:
		return c, errors.New("USERS, DUPS and STOCK must be at least 1")
	case !oneOf(c.Driver, "k6", "jmeter", "go", "auto"):
		return c, fmt.Errorf("DRIVER=%s: k6, jmeter, go or auto", c.Driver)
	case !oneOf(c.Scenario, "burst", "random"):
		return c, fmt.Errorf("SCENARIO=%s: burst or random", c.Scenario)
	case c.MySQLDSN == "":
		return c, errors.New("SECKILL_MYSQL_DSN is empty: the load test needs the real MariaDB (see .ci/env.sh)")
	case !oneOf(redisKind, "single", "cluster"):
		return c, fmt.Errorf("REDIS=%s: single or cluster", redisKind)
	case !c.Cluster && c.RedisAddr == "":
		return c, errors.New("SECKILL_REDIS_ADDR is empty: the load test needs the real Redis (see .ci/env.sh)")
	case c.Cluster && c.ClusterAddrs == "":
		return c, errors.New("REDIS=cluster: SECKILL_TEST_CLUSTER_ADDRS is empty: the load test needs the Redis Cluster of .ci/services.sh (see .ci/env.sh)")
	case c.PayShare+c.CancelShare > 1:
		return c, errors.New("PAY_SHARE + CANCEL_SHARE must be at most 1")
	case c.PayTimeout != "" && !regexp.MustCompile(`^[0-9]+(ms|s|m)$`).MatchString(c.PayTimeout):
		return c, fmt.Errorf("PAY_TIMEOUT=%s: a duration such as 3s", c.PayTimeout)
	case c.Driver == "jmeter" && (c.life() || c.SettleS > 0):
		return c, errors.New("DRIVER=jmeter only buys: the order's life (PAY_SHARE, CANCEL_SHARE, SETTLE) needs k6 or the Go driver")
	case c.Driver == "jmeter" && (c.Slow || c.SpacingMS != 0):
		return c, errors.New("DRIVER=jmeter plays a list of requests without spacing: the slow-business schedule (SLOW=1, SPACING_MS) needs k6")
	}
	return c, nil
}

// redisEnv is the instances' Redis settings: SECKILL_REDIS_ADDR (inherited),
// or, with REDIS=cluster, the cluster instead.
func (c ltConfig) redisEnv() []string {
	if !c.Cluster {
		return nil
	}
	return []string{"SECKILL_REDIS_ADDR=", "SECKILL_REDIS_CLUSTER_ADDRS=" + c.ClusterAddrs}
}

// lifeEnv is the instances' settings of the order's life.
func (c ltConfig) lifeEnv() []string {
	if c.PayTimeout == "" {
		return nil
	}
	return []string{"SECKILL_PAY_TIMEOUT=" + c.PayTimeout}
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// number is a decimal as a driver printed it ("1234.5"): the table shows
// it as is, results.json as a JSON number.
type number string

// toNumber keeps v when it is a plain decimal, "0" otherwise.
func toNumber(v string) number {
	if regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`).MatchString(v) {
		return number(v)
	}
	return "0"
}

func (n number) MarshalJSON() ([]byte, error) { return []byte(toNumber(string(n))), nil }

func (n *number) UnmarshalJSON(b []byte) error {
	*n = toNumber(strings.Trim(string(b), `"`))
	return nil
}

// LtResult is what one experiment found: the table, result.env and
// results.json.
type LtResult struct {
	Mode          string           `json:"mode"`
	Instances     int              `json:"instances"`
	Setting       string           `json:"setting"`
	LockTTL       string           `json:"lockTtl"`
	CriticalDelay string           `json:"criticalDelay"`
	Driver        string           `json:"driver"`
	Scenario      string           `json:"scenario"`
	OrderMode     string           `json:"orderMode"`
	Redis         string           `json:"redis"`   // single or cluster (REDIS)
	Buckets       int              `json:"buckets"` // SECKILL_STOCK_BUCKETS (BUCKETS)
	Fencing       string           `json:"fencing"`
	Users         int              `json:"users"`
	Dups          int              `json:"dups"`
	SpacingMS     int              `json:"spacingMs"`
	VUs           int              `json:"vus"`
	VoucherID     int64            `json:"voucherId"`
	InitialStock  int64            `json:"initialStock"`
	StockLeft     int64            `json:"stockLeft"`
	Requests      int64            `json:"requests"`
	Codes         map[string]int64 `json:"codes"`
	LockRefused   int64            `json:"lockRefused"`
	PastLock      int64            `json:"pastLock"`
	// ScriptRefused: async mode, the DUPLICATE_ORDER answers of the
	// admission script (the user's buyer mark in Redis); the lock is the
	// consumer's there, never on the request path.
	ScriptRefused int64             `json:"scriptRefused"`
	UniqueKey     int64             `json:"uniqueKey"`
	DupRejAudit   int64             `json:"duplicateRejectionsAudit"`
	ServerOK      int64             `json:"serverOk"`
	ServerDup     int64             `json:"serverDuplicate"`
	OtherCodes    string            `json:"otherCodes"`
	Orders        int64             `json:"orders"`
	DistinctUsers int64             `json:"distinctUsers"`
	Oversold      bool              `json:"oversold"`
	Consistent    bool              `json:"consistent"`
	Invariant5    string            `json:"invariant5"`
	Violations    []model.Violation `json:"violations"`
	Breaches      int64             `json:"breaches"`
	Unexpected    int64             `json:"unexpected"`
	RPS           number            `json:"rps"`
	P50ms         number            `json:"p50Ms"`
	P95ms         number            `json:"p95Ms"`
	P99ms         number            `json:"p99Ms"`
	ElapsedS      float64           `json:"elapsedS"`
	DriverExit    int               `json:"driverExit"`
	Failures      []string          `json:"failures"` // why the exit status is 1 (empty: passed)
	Status        int               `json:"status"`   // the exit status
	Out           string            `json:"out"`
	// The order's life (PAY_SHARE, CANCEL_SHARE): what buyers did and
	// got (life_<action>_<code> of the driver), the orders by status
	// after the settle, units sold again after a cancel or an expiry,
	// and units sold twice (must be 0).
	PayShare    float64          `json:"payShare,omitempty"`
	CancelShare float64          `json:"cancelShare,omitempty"`
	PayTimeout  string           `json:"payTimeout,omitempty"`
	Life        map[string]int64 `json:"life,omitempty"`
	Unpaid      int64            `json:"unpaid"`
	Paid        int64            `json:"paid"`
	Expired     int64            `json:"expired"`
	Cancelled   int64            `json:"cancelled"`
	GivebackDue int64            `json:"givebackDue"`
	SoldAgain   int64            `json:"soldAgain"`
	SoldTwice   int64            `json:"soldTwice"`
	SettledS    float64          `json:"settledS,omitempty"`
}

// lifeExpected are the answers to a pay or a cancel that the business
// gives: anything else fails the run.
var lifeExpected = map[string]bool{"OK": true, "ORDER_EXPIRED": true, "ORDER_CANCELLED": true, "ORDER_PAID": true}

// lifeText renders the life answers as action_code=n, sorted.
func lifeText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// renderTable is the printed report.
func renderTable(r LtResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nseckill load test: mode=%s instances=%d setting=%s (lease %s, critical delay %s) driver=%s scenario=%s\n",
		r.Mode, r.Instances, r.Setting, r.LockTTL, r.CriticalDelay, r.Driver, r.Scenario)
	if r.OrderMode == "async" {
		fmt.Fprintf(&b, "  async admission on %s, %d bucket(s)\n", redisName(r.Redis), max(r.Buckets, 1))
	}
	other := r.OtherCodes
	if other == "" {
		other = "none"
	}
	rows := [][2]string{
		{"voucher", fmt.Sprintf("%d (initial stock %d)", r.VoucherID, r.InitialStock)},
		{"users x purchases each", fmt.Sprintf("%d x %d (spacing %d ms)", r.Users, r.Dups, r.SpacingMS)},
		{"requests", fmt.Sprint(r.Requests)},
		{"200 OK", fmt.Sprint(r.Codes["OK"])},
		{"409 SOLD_OUT", fmt.Sprint(r.Codes["SOLD_OUT"])},
		{"409 DUPLICATE_ORDER", fmt.Sprint(r.Codes["DUPLICATE_ORDER"])},
	}
	if r.OrderMode == "async" {
		rows = append(rows, [2]string{"  refused by the admission script", fmt.Sprint(r.ScriptRefused)},
			[2]string{"consumer lock refused / unique key", fmt.Sprintf("%d / %d (audit counter: %d)", r.LockRefused, r.UniqueKey, r.DupRejAudit)})
	} else {
		rows = append(rows, [2]string{"  of which lock refused", fmt.Sprint(r.LockRefused)},
			[2]string{"  of which past lock, tx check", fmt.Sprint(r.PastLock)},
			[2]string{"  of which unique key (DB)", fmt.Sprintf("%d (audit counter: %d)", r.UniqueKey, r.DupRejAudit)})
	}
	rows = append(rows, [][2]string{
		{"other codes", other},
		{"orders in DB / distinct users", fmt.Sprintf("%d / %d", r.Orders, r.DistinctUsers)},
		{"stock left", fmt.Sprint(r.StockLeft)},
		{"oversold", testbed.YesNo(r.Oversold)},
		{"consistent (invariants 1-5)", testbed.YesNo(r.Consistent)},
		{"invariant 5 (async)", r.Invariant5},
		{"req/s", string(r.RPS)},
		{"latency p50 / p95 / p99 (ms)", fmt.Sprintf("%s / %s / %s", r.P50ms, r.P95ms, r.P99ms)},
		{"lock breaches", fmt.Sprint(r.Breaches)},
		{"server OK count / driver 200s", fmt.Sprintf("%d / %d", r.ServerOK, r.Codes["OK"])},
	}...)
	if r.PayShare+r.CancelShare > 0 {
		rows = append(rows, [][2]string{
			{"life: pay / cancel shares, timeout", fmt.Sprintf("%g / %g, SECKILL_PAY_TIMEOUT=%s", r.PayShare, r.CancelShare, r.PayTimeout)},
			{"life: answers", lifeText(r.Life)},
			{"unpaid / paid / expired / cancelled", fmt.Sprintf("%d / %d / %d / %d", r.Unpaid, r.Paid, r.Expired, r.Cancelled)},
			{"stock + unpaid + paid", fmt.Sprintf("%d + %d + %d = %d (initial %d)", r.StockLeft, r.Unpaid, r.Paid, r.StockLeft+r.Unpaid+r.Paid, r.InitialStock)},
			{"give-backs due", fmt.Sprint(r.GivebackDue)},
			{"units sold again / sold twice", fmt.Sprintf("%d / %d", r.SoldAgain, r.SoldTwice)},
			{"settled after the load", fmt.Sprintf("%.1f s", r.SettledS)},
		}...)
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "  %-34s %s\n", row[0], row[1])
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  VIOLATION %s\n", v)
	}
	fmt.Fprintf(&b, "  output: %s\n", r.Out)
	return b.String()
}

// resultEnv is OUT/result.env (KEY=VALUE lines).
func resultEnv(r LtResult) string {
	kv := [][2]string{
		{"mode", r.Mode}, {"instances", fmt.Sprint(r.Instances)}, {"setting", r.Setting}, {"driver", r.Driver},
		{"requests", fmt.Sprint(r.Requests)}, {"ok", fmt.Sprint(r.Codes["OK"])}, {"sold_out", fmt.Sprint(r.Codes["SOLD_OUT"])},
		{"duplicate", fmt.Sprint(r.Codes["DUPLICATE_ORDER"])}, {"lock_refused", fmt.Sprint(r.LockRefused)},
		{"past_lock", fmt.Sprint(r.PastLock)}, {"unique_key", fmt.Sprint(r.UniqueKey)}, {"other_codes", r.OtherCodes},
		{"orders", fmt.Sprint(r.Orders)}, {"initial", fmt.Sprint(r.InitialStock)}, {"oversold", testbed.YesNo(r.Oversold)},
		{"consistent", testbed.YesNo(r.Consistent)}, {"violations", fmt.Sprint(len(r.Violations))},
		{"breaches", fmt.Sprint(r.Breaches)}, {"unexpected", fmt.Sprint(r.Unexpected)}, {"rps", string(r.RPS)},
		{"p50_ms", string(r.P50ms)}, {"p95_ms", string(r.P95ms)}, {"p99_ms", string(r.P99ms)},
		{"elapsed_s", fmt.Sprintf("%.1f", r.ElapsedS)},
	}
	var b strings.Builder
	for _, p := range kv {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	return b.String()
}

// judge fills the derived figures (past lock, breaches, oversold,
// consistent, unexpected answers), the failures and the exit status, as
// the former loadtest/run.sh did, and returns the log lines to print after the table.
func judge(r *LtResult, slow, allowBreach, matrix bool) (notes []string) {
	// Duplicates that obtained the lock and were stopped by the
	// transaction's "already bought" check: a later duplicate normally, a
	// broken lock under the slow-business schedule. In async mode every
	// DUPLICATE_ORDER answer is the admission script's (the lock and the
	// unique key are the consumer's, after the answer): a duplicate the
	// script let through is an order the consumer could not write, so it
	// shows as a unique-key rejection and a lost announced order.
	if r.OrderMode == "async" {
		r.ScriptRefused, r.PastLock = r.ServerDup, 0
	} else {
		r.ScriptRefused, r.PastLock = 0, r.ServerDup-r.LockRefused-r.UniqueKey
	}
	r.Breaches = r.UniqueKey
	if slow {
		r.Breaches += r.PastLock
	}
	r.Oversold = r.Orders > r.InitialStock || r.StockLeft < 0
	r.Consistent = len(r.Violations) == 0
	var other []string
	r.Unexpected = 0
	for _, c := range allCodes {
		if c == "OK" || c == "SOLD_OUT" || c == "DUPLICATE_ORDER" {
			continue
		}
		if n := r.Codes[c]; n > 0 {
			r.Unexpected += n
			other = append(other, fmt.Sprintf("%s=%d", c, n))
		}
	}
	r.OtherCodes = strings.Join(other, " ")
	r.Failures = nil
	if len(r.Violations) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d invariant violation(s)", len(r.Violations)))
	}
	if r.Breaches > 0 {
		if allowBreach {
			notes = append(notes, fmt.Sprintf("note: the %s lock let %d duplicate(s) through (reported, not failed)", r.Mode, r.Breaches))
		} else {
			r.Failures = append(r.Failures, fmt.Sprintf("the %s lock let %d duplicate(s) through", r.Mode, r.Breaches))
		}
	}
	if r.Unexpected > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d responses were neither 200 nor an expected 409 (%s)", r.Unexpected, r.OtherCodes))
	}
	if r.PayShare+r.CancelShare > 0 {
		var bad []string
		for k, n := range r.Life {
			_, code, _ := strings.Cut(k, "_")
			if k != "walk_away" && !lifeExpected[code] && n > 0 {
				bad = append(bad, fmt.Sprintf("%s=%d", k, n))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			r.Failures = append(r.Failures, "unexpected answers to pay or cancel: "+strings.Join(bad, " "))
		}
		if r.Unpaid > 0 || r.GivebackDue > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%d order(s) still unpaid and %d give-back(s) due after the settle", r.Unpaid, r.GivebackDue))
		}
		if r.Life["walk_away"] > 0 && r.Expired == 0 {
			r.Failures = append(r.Failures, "no order expired: the expiry was not exercised")
		}
	}
	if r.SoldTwice > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d unit(s) sold twice", r.SoldTwice))
	}
	if r.DriverExit != 0 && len(r.Failures) == 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("the driver exited %d (see %s/%s.log)", r.DriverExit, r.Out, r.Driver))
	}
	for _, f := range r.Failures {
		notes = append(notes, "FAIL: "+f)
	}
	r.Status = 0
	if len(r.Failures) > 0 {
		r.Status = 1
		if matrix {
			notes = append(notes, "matrix mode: reported, not failed")
			r.Status = 0
		}
	}
	return notes
}

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

func (e ltDie) Error() string { return e.msg }

func RunLoadtest(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testbed.ProjectRoot()
	if err == nil {
		err = testbed.LoadCIEnv(root)
	}
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

// run makes the experiment; the caller stops the instances.
func (l *loadtest) run() (LtResult, error) {
	r := LtResult{Mode: l.Mode, Instances: l.Instances, Setting: l.Setting, LockTTL: l.LockTTL,
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
		rdb = repository.NewClusterRedisClient(strings.Split(l.ClusterAddrs, ","), repository.RedisAuth{})
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
		l.logf("building bin/seckill-load (loadtest/driver)")
		err = testbed.GoBuild(l.ctx, l.Root, "bin/seckill-load", "./loadtest/driver")
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
	facts, err := auditdb.ReadDB(l.ctx, db, d.voucher)
	if err != nil {
		return r, err
	}
	facts.Announced, facts.CheckAnnounced = d.announced, true
	r.Invariant5 = "n/a"
	var redisErr error
	if l.OrderMode == "async" {
		// The queue has drained: nothing is pending.
		facts.Async, redisErr = auditdb.ReadRedis(l.ctx, rdb, d.voucher)
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
	if r.DupRejAudit, err = auditdb.DuplicateRejections(l.ctx, rdb, d.voucher); err != nil {
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

// waitQueueDrained polls until the voucher's Redis stock plus its live
// orders and the give-backs due equal its initial stock (the async queue
// has drained: nothing pending) or the limit passes.
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
