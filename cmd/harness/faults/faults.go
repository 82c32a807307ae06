package faults

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"seckill/cmd/harness/testbed"
	auditdb "seckill/internal/audit"
	"seckill/internal/proc"
	"seckill/internal/redisproc"
	"seckill/model"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// harness faults: the fault suite (make faults; issue 11, item 4). Each
// case starts two `seckill serve` instances on PRIVATE dependencies (a
// MariaDB, Redis servers, a Sentinel setup of the suite's own, on their own
// loopback ports in a temporary directory: the shared services of
// .ci/services.sh are never touched), sends a paced load generated in
// process, injects its fault at a known point of the load (an instance,
// Redis, the Sentinel primary, MariaDB or a Redlock node killed, a lock
// holder frozen past its lease), recovers, waits for the outcome with
// bounded polls, and audits the voucher: the five invariants of
// docs/contract.md (internal/audit and model.Facts, Announced = every
// 200's order id), read from the database directly, and what every request
// got. One line per case; faults/RESULTS.md and faults/results.json.
//
// Exit status: 0 every case met its expectation, 1 a case did not, 2 the
// suite or a case could not run. Settings: faults/README.md.

// faultSettings are the suite's settings (environment variables).
type faultSettings struct {
	Cases      []string      // CASE: names or prefixes, comma separated ("" = all)
	Users      int           // FAULTS_USERS
	Dups       int           // FAULTS_DUPS
	Stock      int           // FAULTS_STOCK
	Duration   time.Duration // FAULTS_DURATION: the load's scheduled length
	BasePort   int           // FAULTS_BASE_PORT
	Rebuild    string        // FAULTS_REBUILD: if-needed or never
	AutoWait   time.Duration // FAULTS_AUTO_WAIT: how long Redis-restart recovery may take without a person
	DrainLimit time.Duration // FAULTS_DRAIN_LIMIT: async: bound of the wait for the stream to drain
	Out        string        // FAULTS_OUT: where RESULTS.md and results.json go
	Keep       bool          // FAULTS_KEEP=1: keep the work directory (logs, datadir)
	SkipBuild  bool          // SKIP_BUILD=1: use bin/seckill as it is
	Seed       uint64        // FAULTS_SEED
}

// faultDefaults are the settings' defaults, as faults/README.md lists them.
var faultDefaults = map[string]string{
	"FAULTS_USERS": "600", "FAULTS_DUPS": "3", "FAULTS_STOCK": "300", "FAULTS_DURATION": "9s",
	"FAULTS_BASE_PORT": "27300", "FAULTS_REBUILD": "if-needed", "FAULTS_AUTO_WAIT": "20s",
	"FAULTS_DRAIN_LIMIT": "45s", "FAULTS_SEED": "11",
}

// faultSettingsFrom reads the settings; out defaults to root/faults.
func faultSettingsFrom(getenv func(string) string, root string) (faultSettings, error) {
	get := func(k string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return faultDefaults[k]
	}
	var s faultSettings
	var errs []string
	num := func(k string, dst *int, min int) {
		n, err := strconv.Atoi(get(k))
		if err != nil || n < min {
			errs = append(errs, fmt.Sprintf("%s=%s: a whole number >= %d", k, get(k), min))
		}
		*dst = n
	}
	dur := func(k string, dst *time.Duration) {
		d, err := time.ParseDuration(get(k))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%s: a duration like 9s", k, get(k)))
		}
		*dst = d
	}
	num("FAULTS_USERS", &s.Users, 20)
	num("FAULTS_DUPS", &s.Dups, 1)
	num("FAULTS_STOCK", &s.Stock, 1)
	num("FAULTS_BASE_PORT", &s.BasePort, 1024)
	dur("FAULTS_DURATION", &s.Duration)
	dur("FAULTS_AUTO_WAIT", &s.AutoWait)
	dur("FAULTS_DRAIN_LIMIT", &s.DrainLimit)
	seed, err := strconv.ParseUint(get("FAULTS_SEED"), 10, 64)
	if err != nil {
		errs = append(errs, "FAULTS_SEED: a whole number")
	}
	s.Seed = seed
	s.Rebuild = get("FAULTS_REBUILD")
	if s.Rebuild != "if-needed" && s.Rebuild != "never" {
		errs = append(errs, fmt.Sprintf("FAULTS_REBUILD=%s: if-needed or never", s.Rebuild))
	}
	for _, c := range strings.Split(getenv("CASE"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			s.Cases = append(s.Cases, c)
		}
	}
	if _, err := selectCases(faultCases, s.Cases); err != nil {
		errs = append(errs, err.Error())
	}
	if s.Stock >= s.Users {
		errs = append(errs, fmt.Sprintf("FAULTS_STOCK=%d must be below FAULTS_USERS=%d (the sale must sell out)", s.Stock, s.Users))
	}
	if err := portsFrom(s.BasePort).check(); err != nil {
		errs = append(errs, err.Error())
	}
	s.Out = getenv("FAULTS_OUT")
	if s.Out == "" {
		s.Out = filepath.Join(root, "faults")
	}
	s.Keep = getenv("FAULTS_KEEP") == "1"
	s.SkipBuild = getenv("SKIP_BUILD") == "1"
	if len(errs) > 0 {
		return s, errors.New(strings.Join(errs, "; "))
	}
	return s, nil
}

// selectCases picks the cases named (exactly, or by a prefix such as
// "mariadb"); none named is all of them.
func selectCases(all []faultCase, names []string) ([]faultCase, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []faultCase
	for _, c := range all {
		for _, n := range names {
			if c.Name == n || strings.HasPrefix(c.Name, n+"-") || strings.HasPrefix(c.Name, n) && strings.HasSuffix(n, "-") {
				out = append(out, c)
				break
			}
		}
	}
	for _, n := range names {
		found := false
		for _, c := range out {
			if c.Name == n || strings.HasPrefix(c.Name, n+"-") || strings.HasPrefix(c.Name, n) && strings.HasSuffix(n, "-") {
				found = true
			}
		}
		if !found {
			var known []string
			for _, c := range all {
				known = append(known, c.Name)
			}
			return nil, fmt.Errorf("CASE=%s: no such case (cases: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// CaseResult is what one case found: the printed line, a row of
// RESULTS.md and an entry of results.json.
type CaseResult struct {
	Name        string `json:"name"`
	LockMode    string `json:"lockMode"`
	OrderMode   string `json:"orderMode"`
	Fault       string `json:"fault"`
	Expectation string `json:"expectation"`
	VoucherID   int64  `json:"voucherId"`

	Requests int            `json:"requests"`
	Status   map[string]int `json:"status"` // "200", "409", "503", "500", "other"
	Codes    map[string]int `json:"codes"`  // by response code (OK, SOLD_OUT, UNAVAILABLE, TRANSPORT, ...)

	InitialStock int64 `json:"initialStock"`
	StockLeft    int64 `json:"stockLeft"`
	Orders       int64 `json:"orders"`
	Oversold     bool  `json:"oversold"`
	// The 200s: written (in the database), reported failed to their owner
	// (async dead letters), lost (neither).
	Written        int `json:"written"`
	ReportedFailed int `json:"reportedFailed"`
	Lost           int `json:"lost"`
	// Orders no 200 announced: Ambiguous when the buyer's request ended
	// in a transport error (the client cannot know), NoAnnounce when the
	// buyer was told a failure (an ambiguous commit told as failure).
	Ambiguous  int `json:"ambiguous"`
	NoAnnounce int `json:"noAnnounce"`

	UniqueKey   int64 `json:"uniqueKey"`   // seckill_unique_key_rejections_total, live instances
	LockRefused int64 `json:"lockRefused"` // seckill_lock_not_obtained_total
	StaleFence  int64 `json:"staleFence"`  // seckill_stale_fence_rejections_total
	Claimed     int64 `json:"claimed"`     // seckill_async_claimed_total

	Consistent bool              `json:"consistent"`
	Violations []model.Violation `json:"violations"`
	// Measures are the case's own figures (the unavailable window, the
	// recovery, the late writes...), in print order.
	Measures []measure `json:"measures"`
	Marks    []mark    `json:"marks"` // the fault's moments, seconds since the load's start
	Notes    []string  `json:"notes"`

	// transportOK: the case kills an instance under its requests, so
	// transport errors are expected.
	transportOK bool

	Verdict  string   `json:"verdict"` // pass, FAIL, shown (an expected-weak demonstration), ERROR
	Failures []string `json:"failures"`
	Error    string   `json:"error,omitempty"`
	ElapsedS float64  `json:"elapsedS"`
	LogDir   string   `json:"logDir"`
}

// measure is one named figure of a case.
type measure struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// mark is one moment of a fault.
type mark struct {
	Name string  `json:"name"`
	AtS  float64 `json:"atS"`
}

// addMeasure appends a figure.
func (r *CaseResult) addMeasure(name, format string, a ...any) {
	r.Measures = append(r.Measures, measure{name, fmt.Sprintf(format, a...)})
}

// measureOf is a figure's value ("" when absent).
func (r *CaseResult) measureOf(name string) string {
	for _, m := range r.Measures {
		if m.Name == name {
			return m.Value
		}
	}
	return ""
}

// fail records a failure of the case's expectation.
func (r *CaseResult) fail(format string, a ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, a...))
}

// tallyShots counts the shots by status bucket and by code.
func tallyShots(shots []shot) (status, codes map[string]int) {
	status = map[string]int{"200": 0, "409": 0, "503": 0, "500": 0, "other": 0}
	codes = map[string]int{}
	for _, s := range shots {
		status[s.bucket()]++
		codes[s.Code]++
	}
	return status, codes
}

// orderState is what became of one announced order: "written",
// "failed" (reported failed to its owner), "pending" or "lost".
type orderState string

// classification is the comparison of the answers with the database.
type classification struct {
	Written, Failed, Pending, Lost []int64 // announced order ids
	Ambiguous, NoAnnounce          []int64 // orders no 200 announced
	Announced                      []model.Announced
}

// classify compares the 200s with the orders in the database: each 200's
// order is written, reported failed (states[id] == "failed", async only),
// still pending, or lost; each order no 200 announced is ambiguous (its
// buyer had a transport error: the client cannot know whether it bought)
// or a failure told for a purchase that happened. Announced is what
// invariant 4 is judged against: the 200s but the ones reported failed,
// plus the ambiguous orders.
func classify(shots []shot, users []faultUser, orders map[int64]int64, states map[int64]string) classification {
	var c classification
	seen := map[int64]bool{}
	transport := map[int64]bool{} // users with a transport error
	for _, s := range shots {
		uid := users[s.User].ID
		if s.Code == "TRANSPORT" {
			transport[uid] = true
		}
		if s.Code != "OK" || seen[s.OrderID] {
			continue
		}
		seen[s.OrderID] = true
		switch _, ok := orders[s.OrderID]; {
		case ok:
			c.Written = append(c.Written, s.OrderID)
		case states[s.OrderID] == "failed":
			c.Failed = append(c.Failed, s.OrderID)
			continue
		case states[s.OrderID] == "pending":
			c.Pending = append(c.Pending, s.OrderID)
		default:
			c.Lost = append(c.Lost, s.OrderID)
		}
		c.Announced = append(c.Announced, model.Announced{OrderID: s.OrderID, UserID: uid})
	}
	ids := make([]int64, 0, len(orders))
	for id := range orders {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if seen[id] {
			continue
		}
		if transport[orders[id]] {
			c.Ambiguous = append(c.Ambiguous, id)
			c.Announced = append(c.Announced, model.Announced{OrderID: id, UserID: orders[id]})
		} else {
			c.NoAnnounce = append(c.NoAnnounce, id)
		}
	}
	return c
}

// firstAt is the earliest Done of the shots satisfying f, and whether
// there is one.
func firstAt(shots []shot, f func(shot) bool) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, s := range shots {
		if f(s) && (!found || s.Done < best) {
			best, found = s.Done, true
		}
	}
	return best, found
}

// between counts the shots sent at or after from and answered by to, by
// status bucket.
func between(shots []shot, from, to time.Duration) map[string]int {
	m := map[string]int{}
	for _, s := range shots {
		if s.Sent >= from && s.Done <= to && s.Done > 0 {
			m[s.bucket()]++
		}
	}
	return m
}

// judgeCommon applies what every case expects: nothing oversold, no 500,
// no order without its 200 told as a failure, invariants 1-3 (and 5 in
// async mode) holding; lost 200s fail unless lostReported (a case that
// measures them). Invariant 4 is judged through Lost and NoAnnounce.
func judgeCommon(r *CaseResult, lostReported bool) {
	if r.Oversold {
		r.fail("oversold: %d orders for an initial stock of %d", r.Orders, r.InitialStock)
	}
	if n := r.Status["500"]; n > 0 {
		r.fail("%d answers were 500 (a fault must be 503)", n)
	}
	other := r.Status["other"]
	if r.transportOK {
		other -= r.Codes["TRANSPORT"]
	}
	if other > 0 {
		r.fail("%d answers were neither 200, 409, 503 nor 500 (%s)", other, codesText(otherCodes(r.Codes)))
	}
	if r.NoAnnounce > 0 {
		r.fail("%d order(s) in the database whose buyer was told the purchase failed (orders no 200 announced)", r.NoAnnounce)
	}
	if r.Lost > 0 && !lostReported {
		r.fail("%d order(s) answered 200 are neither written nor reported failed (lost)", r.Lost)
	}
	for _, v := range r.Violations {
		if v.Invariant != 4 {
			r.fail("%s", v)
		}
	}
}

// otherCodes keeps the codes of the "other" column: not OK, a 409 code,
// UNAVAILABLE or INTERNAL.
func otherCodes(codes map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range codes {
		switch k {
		case "OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED", "UNAVAILABLE", "INTERNAL":
		default:
			out[k] = n
		}
	}
	return out
}

// finishVerdict sets Verdict from the failures (weakShown: an expected-weak
// demonstration that showed its weakness).
func finishVerdict(r *CaseResult, weakShown bool) {
	switch {
	case r.Error != "":
		r.Verdict = "ERROR"
	case len(r.Failures) > 0:
		r.Verdict = "FAIL"
	case weakShown:
		r.Verdict = "shown"
	default:
		r.Verdict = "pass"
	}
}

// faultLine is the one printed line of a case.
func faultLine(r CaseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s req %4d  200 %4d  409 %4d  503 %4d  500 %3d  other %3d  orders %3d  oversold %-3s  lost %3d  consistent %-3s  %-6s",
		r.Name, r.Requests, r.Status["200"], r.Status["409"], r.Status["503"], r.Status["500"], r.Status["other"],
		r.Orders, testbed.YesNo(r.Oversold), r.Lost, testbed.YesNo(r.Consistent), r.Verdict)
	if m := measuresText(r); m != "" {
		b.WriteString("  " + m)
	}
	return b.String()
}

// measuresText is the case's figures in one string.
func measuresText(r CaseResult) string {
	parts := make([]string, 0, len(r.Measures))
	for _, m := range r.Measures {
		parts = append(parts, m.Name+" "+m.Value)
	}
	return strings.Join(parts, "; ")
}

// FaultsReport is results.json.
type FaultsReport struct {
	Date     string       `json:"date"`
	Command  string       `json:"command"`
	Machine  string       `json:"machine"`
	Settings []string     `json:"settings"`
	ElapsedS float64      `json:"elapsedS"`
	Status   int          `json:"status"`
	Cases    []CaseResult `json:"cases"`
}

// exitStatus is 1 when a case failed its expectation, else 2 when one
// could not run, else 0.
func exitStatus(cases []CaseResult) int {
	status := 0
	for _, c := range cases {
		switch c.Verdict {
		case "FAIL":
			return 1
		case "ERROR":
			status = 2
		}
	}
	return status
}

// renderFaultsMarkdown is RESULTS.md.
func renderFaultsMarkdown(rep FaultsReport) string {
	var b strings.Builder
	b.WriteString("# Fault suite results\n\n")
	fmt.Fprintf(&b, "Written by `harness faults` (`cmd/harness/faults`); what each case does and\n"+
		"its settings: [README.md](README.md).\n\n")
	settings := strings.Join(rep.Settings, " ")
	if settings == "" {
		settings = "the defaults (faults/README.md)"
	}
	fmt.Fprintf(&b, "- date: %s\n- command: `%s`\n- machine: %s\n- settings: %s\n- elapsed: %.0f s, exit status %d\n\n",
		rep.Date, rep.Command, rep.Machine, settings, rep.ElapsedS, rep.Status)
	b.WriteString("| case | requests | 200 | 409 | 503 | 500 | other | orders | oversold | lost | consistent | verdict | measured |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|---|\n")
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %d | %s | %s | %s |\n",
			c.Name, c.Requests, c.Status["200"], c.Status["409"], c.Status["503"], c.Status["500"], c.Status["other"],
			c.Orders, testbed.YesNo(c.Oversold), c.Lost, testbed.YesNo(c.Consistent), c.Verdict, strings.ReplaceAll(measuresText(c), "|", "/"))
	}
	b.WriteString("\nPrinted lines:\n\n```\n")
	for _, c := range rep.Cases {
		b.WriteString(faultLine(c) + "\n")
	}
	b.WriteString("```\n\n## Cases\n\n")
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "### %s (%s, %s): %s\n\n", c.Name, c.LockMode, c.OrderMode, c.Verdict)
		fmt.Fprintf(&b, "- fault: %s\n- expectation: %s\n", c.Fault, c.Expectation)
		fmt.Fprintf(&b, "- voucher %d: initial stock %d, stock left %d, orders %d; 200s written %d, reported failed %d, lost %d; orders no 200 announced: %d told failure, %d after a transport error\n",
			c.VoucherID, c.InitialStock, c.StockLeft, c.Orders, c.Written, c.ReportedFailed, c.Lost, c.NoAnnounce, c.Ambiguous)
		fmt.Fprintf(&b, "- metrics (live instances): unique-key rejections %d, lock refused %d, stale fences %d, claimed %d\n",
			c.UniqueKey, c.LockRefused, c.StaleFence, c.Claimed)
		fmt.Fprintf(&b, "- codes: %s\n", codesText(c.Codes))
		if len(c.Marks) > 0 {
			var ms []string
			for _, m := range c.Marks {
				ms = append(ms, fmt.Sprintf("%s %.2f s", m.Name, m.AtS))
			}
			fmt.Fprintf(&b, "- moments (since the load's start): %s\n", strings.Join(ms, ", "))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- note: %s\n", n)
		}
		for _, v := range c.Violations {
			fmt.Fprintf(&b, "- violation: %s\n", v)
		}
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "- FAIL: %s\n", f)
		}
		if c.Error != "" {
			fmt.Fprintf(&b, "- ERROR: %s\n", c.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// codesText lists the codes and their counts, sorted.
func codesText(codes map[string]int) string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, codes[k])
	}
	return strings.Join(parts, " ")
}

// readFaultsReport reads a results.json.
func readFaultsReport(path string) (FaultsReport, error) {
	var rep FaultsReport
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// suite is the fault suite being run.
type suite struct {
	faultSettings
	root, bin, work string
	ports           faultPorts
	db              *testbed.PrivateMariaDB
	sqlDB           *sql.DB
	users           []faultUser
	admin           string
	api             *apiClient
	procs           *testbed.ProcGroup
}

func (s *suite) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[faults] "+format+"\n", a...)
}

// runFaults is `harness faults`.
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
	rep := FaultsReport{Date: started.UTC().Format("2006-01-02 15:04 UTC"), Command: faultsCommand(os.Getenv),
		Machine: testbed.Machine(), Settings: faultSettingsText(os.Getenv), ElapsedS: time.Since(started).Seconds(), Cases: results}
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

// faultsCommand is the command line that reproduces the run.
func faultsCommand(getenv func(string) string) string {
	cmd := "make faults"
	if c := getenv("CASE"); c != "" {
		cmd += " CASE=" + c
	}
	for _, kv := range faultSettingsText(getenv) {
		cmd += " " + kv
	}
	return cmd
}

// faultSettingsText lists the settings that differ from their defaults.
func faultSettingsText(getenv func(string) string) []string {
	keys := make([]string, 0, len(faultDefaults))
	for k := range faultDefaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if v := getenv(k); v != "" && v != faultDefaults[k] {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// run prepares the suite (build, private MariaDB, schema, tokens) and runs
// the cases; an error is a suite that could not run.
func (s *suite) run(ctx context.Context, cases []faultCase) ([]CaseResult, error) {
	s.bin = filepath.Join(s.root, "bin/seckill")
	if !s.SkipBuild || !testbed.IsExe(s.bin) {
		s.logf("building bin/seckill")
		if err := testbed.GoBuild(ctx, s.root, "bin/seckill", "."); err != nil {
			return nil, err
		}
	}
	// The layout's ports must be free; when one is taken (someone else's
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

// firstTaken is the first port of the layout something listens on (0:
// none).
func firstTaken(p faultPorts) int {
	for _, port := range p.all() {
		if !testbed.FreePort(port) {
			return port
		}
	}
	return 0
}

func caseNames(cases []faultCase) string {
	n := make([]string, len(cases))
	for i, c := range cases {
		n[i] = c.Name
	}
	return strings.Join(n, " ")
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
	e.voucher, err = s.api.publish(ctx, ins[0].URL, s.admin, 1, s.Stock, 15*time.Minute)
	return err
}

// audit waits for the outcome (async: the stream drained), reads the
// metrics of the live instances and the owners' view of the 200s whose
// orders are not written, stops the instances, then reads the database
// and Redis and judges.
func (s *suite) audit(ctx context.Context, c faultCase, e *caseEnv, l *loadRun, shots []shot, r *CaseResult) error {
	if c.OrderMode == "async" {
		t0 := time.Now()
		err := proc.WaitFor(ctx, "the order stream drains", s.DrainLimit, 100*time.Millisecond, nil, func() bool {
			n, err := streamLen(ctx, e.rdb)
			return err == nil && n == 0
		})
		if err != nil {
			n, _ := streamLen(ctx, e.rdb)
			r.Notes = append(r.Notes, fmt.Sprintf("the stream did not drain within %s: %d entries left", s.DrainLimit, n))
		} else {
			r.addMeasure("drained", "%.1fs after the load", time.Since(t0).Seconds())
		}
	}
	if c.Expiry {
		s.settleExpiry(ctx, e, r)
	}
	var live []string
	for i, in := range e.ins {
		if !e.killed[i] {
			live = append(live, in.URL)
		}
	}
	metrics, err := testbed.ScrapeMetrics(live)
	if err != nil {
		return err
	}
	r.UniqueKey = testbed.MetricSum(metrics, "seckill_unique_key_rejections_total", "")
	r.LockRefused = testbed.MetricSum(metrics, "seckill_lock_not_obtained_total", "")
	r.StaleFence = testbed.MetricSum(metrics, "seckill_stale_fence_rejections_total", "")
	r.Claimed = testbed.MetricSum(metrics, "seckill_async_claimed_total", "")
	if c.metrics != nil {
		if err := c.metrics(e, r); err != nil {
			return err
		}
	}

	// The owners' view of the 200s not in the database (async: failed
	// or pending), asked while the instances run.
	facts, err := auditdb.ReadDB(ctx, s.sqlDB, e.voucher)
	if err != nil {
		return err
	}
	states := map[int64]string{}
	if c.OrderMode == "async" && len(live) > 0 {
		for _, sh := range shots {
			if sh.Code != "OK" {
				continue
			}
			if _, ok := facts.Orders[sh.OrderID]; ok {
				continue
			}
			st, err := s.api.orderStatus(ctx, live[0], s.users[sh.User].Token, sh.OrderID)
			if err != nil {
				st = "unknown: " + err.Error()
			}
			states[sh.OrderID] = st
		}
	}
	testbed.StopInstances(e.ins)

	// The final facts, from the database and Redis directly.
	if facts, err = auditdb.ReadDB(ctx, s.sqlDB, e.voucher); err != nil {
		return err
	}
	cl := classify(shots, s.users, facts.Orders, states)
	facts.Announced, facts.CheckAnnounced = cl.Announced, true
	if c.OrderMode == "async" {
		a, err := auditdb.ReadRedis(ctx, e.rdb, e.voucher)
		if err != nil {
			r.Violations = append(r.Violations, model.Violation{Invariant: 5, Msg: err.Error()})
		} else {
			pending, err := streamLen(ctx, e.rdb)
			if err != nil {
				return fmt.Errorf("read the stream's length: %w", err)
			}
			a.Pending = pending
			facts.Async = a
		}
	}
	r.Violations = append(facts.Violations(), r.Violations...)
	cnt := facts.Counts()
	r.Requests = len(shots)
	r.Status, r.Codes = tallyShots(shots)
	r.InitialStock, r.StockLeft, r.Orders = cnt.InitialStock, cnt.Stock, cnt.Orders
	r.Oversold = cnt.Oversold() || cnt.Stock < 0
	r.Written, r.ReportedFailed = len(cl.Written), len(cl.Failed)
	r.Lost = len(cl.Lost) + len(cl.Pending)
	r.Ambiguous, r.NoAnnounce = len(cl.Ambiguous), len(cl.NoAnnounce)
	if len(cl.Pending) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d order(s) answered 200 still pending at the end (counted lost)", len(cl.Pending)))
	}
	if r.Ambiguous > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d order(s) whose buyer's request ended in a transport error are in the database (the client cannot know: counted as announced)", r.Ambiguous))
	}
	if len(cl.NoAnnounce) > 0 {
		r.Notes = append(r.Notes, "orders no 200 announced: "+idsText(cl.NoAnnounce))
	}
	if len(cl.Lost) > 0 {
		r.Notes = append(r.Notes, "lost 200s: "+idsText(cl.Lost))
	}
	r.Consistent = len(r.Violations) == 0
	r.transportOK = c.KillsInstance
	c.judge(judgement{s: s, e: e, l: l, shots: shots, cl: cl, r: r})
	return nil
}

// idsText lists up to ten ids.
func idsText(ids []int64) string {
	parts := make([]string, 0, 11)
	for i, id := range ids {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(ids)))
			break
		}
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, " ")
}
