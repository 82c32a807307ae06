package loadrun

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/tools/cmd/harness/testbed"
)

func fixedResult() Result {
	return Result{Mode: "lua", Instances: 2, Setting: "normal", LockTTL: "10s", CriticalDelay: "0s",
		Driver: "k6", Scenario: "burst", Users: 300, Dups: 4, VUs: 40, VoucherID: 489, InitialStock: 200,
		Requests: 1200, Codes: map[string]int64{"OK": 200, "SOLD_OUT": 358, "DUPLICATE_ORDER": 642},
		LockRefused: 551, ServerDup: 642, ServerOK: 200, Orders: 200, DistinctUsers: 200, Invariant5: "n/a",
		RPS: "3786.4", P50ms: "14.3", P95ms: "57.0", P99ms: "76.6", Out: "/tmp/out"}
}

const wantTable = `
seckill load test: mode=lua instances=2 setting=normal (lease 10s, critical delay 0s) driver=k6 scenario=burst
  voucher                            489 (initial stock 200)
  users x purchases each             300 x 4 (spacing 0 ms)
  requests                           1200
  200 OK                             200
  409 SOLD_OUT                       358
  409 DUPLICATE_ORDER                642
    of which lock refused            551
    of which past lock, tx check     91
    of which unique key (DB)         0 (audit counter: 0)
  other codes                        none
  orders in DB / distinct users      200 / 200
  stock left                         0
  oversold                           no
  consistent (invariants 1-5)        yes
  invariant 5 (async)                n/a
  req/s                              3786.4
  latency p50 / p95 / p99 (ms)       14.3 / 57.0 / 76.6
  lock breaches                      0
  server OK count / driver 200s      200 / 200
  output: /tmp/out
`

func TestRenderTable(t *testing.T) {
	r := fixedResult()
	if notes := judge(&r, false, false, false); len(notes) != 0 || r.Status != 0 {
		t.Fatalf("judge: notes %q, status %d, want none and 0", notes, r.Status)
	}
	if got := renderTable(r); got != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", got, wantTable)
	}
	r.Violations = []model.Violation{{Invariant: 1, Msg: "201 orders > initial stock 200 (oversold)"}}
	judge(&r, false, false, false)
	got := renderTable(r)
	if !strings.Contains(got, "  consistent (invariants 1-5)        no\n") ||
		!strings.Contains(got, "  VIOLATION invariant 1: 201 orders > initial stock 200 (oversold)\n  output: /tmp/out\n") {
		t.Errorf("table with a violation:\n%s", got)
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name                     string
		change                   func(*Result)
		slow, allowBreach, matrx bool
		status                   int
		breaches                 int64
		note                     string
	}{
		{"sound", func(*Result) {}, false, false, false, 0, 0, ""},
		{"violation", func(r *Result) { r.Violations = []model.Violation{{Invariant: 2}} }, false, false, false, 1, 0, "FAIL: 1 invariant violation(s)"},
		{"violation in the matrix", func(r *Result) { r.Violations = []model.Violation{{Invariant: 2}} }, false, false, true, 0, 0, "matrix mode"},
		{"unique key breach", func(r *Result) { r.UniqueKey = 3 }, false, false, false, 1, 3, "FAIL: the lua lock let 3"},
		{"breach allowed", func(r *Result) { r.UniqueKey = 3 }, false, true, false, 0, 3, "note: the lua lock let 3"},
		{"past lock is a breach when slow", func(*Result) {}, true, false, false, 1, 91, "FAIL: the lua lock let 91"},
		{"unexpected code", func(r *Result) { r.Codes["UNAVAILABLE"] = 2 }, false, false, false, 1, 0, "(UNAVAILABLE=2)"},
		{"driver exit", func(r *Result) { r.DriverExit = 99 }, false, false, false, 1, 0, "the driver exited 99"},
		{"oversold by stock", func(r *Result) { r.StockLeft = -1 }, false, false, false, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixedResult()
			tt.change(&r)
			notes := judge(&r, tt.slow, tt.allowBreach, tt.matrx)
			if r.Status != tt.status || r.Breaches != tt.breaches {
				t.Errorf("status %d breaches %d, want %d %d", r.Status, r.Breaches, tt.status, tt.breaches)
			}
			if all := strings.Join(notes, "\n"); tt.note == "" && all != "" || !strings.Contains(all, tt.note) {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
			if want := 642 - 551 - r.UniqueKey; r.PastLock != want {
				t.Errorf("past lock %d, want 642-551-%d = %d", r.PastLock, r.UniqueKey, want)
			}
		})
	}
}

func TestResultsJSONRoundTrip(t *testing.T) {
	r := fixedResult()
	judge(&r, false, false, false)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rps":3786.4`) || !strings.Contains(string(b), `"p95Ms":57.0`) {
		t.Errorf("numbers are not JSON numbers: %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if renderTable(back) != renderTable(r) {
		t.Errorf("the table changed through results.json:\n%s", renderTable(back))
	}
}

func TestResultEnv(t *testing.T) {
	r := fixedResult()
	judge(&r, false, false, false)
	env := resultEnv(r)
	for _, want := range []string{"mode=lua\n", "past_lock=91\n", "other_codes=\n", "consistent=yes\n", "violations=0\n", "rps=3786.4\n", "elapsed_s=0.0\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("result.env lacks %q:\n%s", want, env)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		base := map[string]string{"SECKILL_MYSQL_DSN": "dsn", "SECKILL_REDIS_ADDR": "addr"}
		for k, v := range kv {
			base[k] = v
		}
		return func(k string) string { return base[k] }
	}
	now := time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)
	c, err := ltConfigFromEnv(env(nil), "/r", now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != "lua" || c.Instances != 2 || c.Stock != 200 || c.LockTTL != "10s" || c.SpacingMS != 0 ||
		c.Out != "/r/tools/loadtest/out/20261123-050000-lua-2-normal" || c.AllowBreach {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ltConfigFromEnv(env(map[string]string{"SLOW": "1", "USERS": "80", "MATRIX": "1"}), "/r", now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stock != 80 || c.LockTTL != "1s" || c.CriticalDelay != "2500ms" || c.RequestTimeout != "15s" ||
		c.SpacingMS != 600 || c.Setting != "slow" || !c.AllowBreach {
		t.Errorf("slow: %+v", c)
	}
	for _, bad := range []map[string]string{
		{"USERS": "x"}, {"INSTANCES": "17"}, {"DUPS": "0"}, {"DRIVER": "wrk"}, {"SCENARIO": "storm"},
		{"DRIVER": "jmeter", "SLOW": "1"}, {"SECKILL_MYSQL_DSN": ""}, {"STOCK": "-1"},
		{"PAY_SHARE": "1.5"}, {"CANCEL_SHARE": "-0.1"}, {"PAY_SHARE": "0.7", "CANCEL_SHARE": "0.4"},
		{"PAY_TIMEOUT": "2"}, {"SETTLE": "x"}, {"DRIVER": "jmeter", "PAY_SHARE": "0.5"},
	} {
		if _, err := ltConfigFromEnv(env(bad), "/r", now); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestMetricSum(t *testing.T) {
	text := `# HELP x
seckill_lock_not_obtained_total 3
seckill_lock_not_obtained_total 4
seckill_seckill_outcomes_total{code="OK"} 10
seckill_seckill_outcomes_total{code="DUPLICATE_ORDER"} 5
seckill_seckill_outcomes_total{code="OK"} 2
`
	if got := testbed.MetricSum(text, "seckill_lock_not_obtained_total", ""); got != 7 {
		t.Errorf("lock refused = %d, want 7", got)
	}
	if got := testbed.MetricSum(text, "seckill_seckill_outcomes_total", `code="OK"`); got != 12 {
		t.Errorf("OK = %d, want 12", got)
	}
	if got := testbed.MetricSum(text, "seckill_unique_key_rejections_total", ""); got != 0 {
		t.Errorf("absent = %d, want 0", got)
	}
}

func TestParseK6Console(t *testing.T) {
	text := `time="2026-11-23T05:40:55Z" level=info msg="VOUCHER 489 stock=200" source=console
time="2026-11-23T05:40:55Z" level=info msg="ORDER 1001 7 http://127.0.0.1:18081" source=console
time="2026-11-23T05:40:55Z" level=info msg="ORDER 1002 8 http://127.0.0.1:18082" source=console
`
	v, a := parseK6Console(text)
	if v != 489 || len(a) != 2 || a[0] != (model.Announced{OrderID: 1001, UserID: 7}) || a[1].UserID != 8 {
		t.Errorf("voucher %d, announced %v", v, a)
	}
}

func TestParseJTL(t *testing.T) {
	jtl := `timeStamp,elapsed,label,responseCode,success,voucherId,orderId,code
1000,5,publish voucher,200,true,77,,
1010,10,buy,200,true,,501,
1012,20,buy,409,true,,,SOLD_OUT
1015,30,buy,409,true,,,WEIRD
1020,40,buy,Non HTTP response code,false,,,
2000,3,audit,200,true,,,
`
	r, err := parseJTL(strings.NewReader(jtl))
	if err != nil {
		t.Fatal(err)
	}
	if r.voucher != 77 || !r.auditOK || len(r.announced) != 1 || r.announced[0].OrderID != 501 {
		t.Errorf("jtl: %+v", r)
	}
	want := "purchases=4\nseconds=0.050\nrps=80.0\ncode_OK=1\ncode_SOLD_OUT=1\n"
	if s := r.summary(); !strings.HasPrefix(s, want) || !strings.Contains(s, "code_OTHER=1\ncode_TRANSPORT=1\ndriver_violations=0\np50_ms=20.0\np95_ms=40.0\np99_ms=40.0\n") {
		t.Errorf("summary:\n%s", s)
	}
}

func TestMatrixVerdicts(t *testing.T) {
	r := fixedResult()
	judge(&r, false, true, true)
	tests := []struct {
		mode, setting string
		change        func(*Result)
		verdict       string
		problem       bool
	}{
		{"lua", "normal", func(*Result) {}, "holds (as expected)", false},
		{"none", "normal", func(r *Result) { r.Breaches = 5 }, "breaks (as expected)", false},
		{"none", "normal", func(*Result) {}, "held this time (expected to break)", false},
		{"redsync", "slow", func(r *Result) { r.Breaches = 1 }, "**breaks, expected to hold**", true},
		{"lua", "normal", func(r *Result) { r.Violations = []model.Violation{{Invariant: 3}} }, "**VIOLATED INVARIANTS**", true},
		{"lua", "normal", func(r *Result) { r.Unexpected, r.OtherCodes = 2, "INTERNAL=2" }, "holds, **2 unexpected answers**", true},
	}
	for _, tt := range tests {
		res := r
		tt.change(&res)
		m := MatrixRun{Mode: tt.mode, Instances: 2, Setting: tt.setting, Expected: Expectation(tt.mode, 2, tt.setting), Result: &res}
		JudgeCell(&m)
		if m.Verdict != tt.verdict || (m.Problem != "") != tt.problem {
			t.Errorf("%s %s: verdict %q problem %q, want %q (problem %v)", tt.mode, tt.setting, m.Verdict, m.Problem, tt.verdict, tt.problem)
		}
	}
	m := MatrixRun{Mode: "lua", Instances: 2, Setting: "normal", Expected: "holds", Result: &r}
	JudgeCell(&m)
	if got, want := m.tableRow(), "| lua | 2 | normal | 1200 | 200 | 358 | 642 | 551 | 91 | 0 | - | no | yes | 3786.4 | 14.3 / 57.0 / 76.6 | holds (as expected) |"; got != want {
		t.Errorf("row\n%s\nwant\n%s", got, want)
	}
	failed := MatrixRun{Mode: "zookeeper", Instances: 1, Setting: "slow", Log: "x.log"}
	JudgeCell(&failed)
	if failed.tableRow() != "| zookeeper | 1 | slow | run failed | | | | | | | | | | | |" || failed.Problem == "" {
		t.Errorf("failed run: %q %q", failed.tableRow(), failed.Problem)
	}
	if e := Expectation("local", 1, "slow"); e != "holds" {
		t.Errorf("local x 1 slow expected %s", e)
	}
}

// In async mode every DUPLICATE_ORDER answer is the admission script's. The
// lock and the unique key are the consumer's. A unique-key rejection there is
// a duplicate the script let through (a breach).
func TestJudgeAsync(t *testing.T) {
	r := fixedResult()
	r.OrderMode, r.Redis, r.Buckets, r.LockRefused = "async", "cluster", 8, 0
	if notes := judge(&r, false, false, false); len(notes) != 0 || r.Status != 0 {
		t.Fatalf("judge: notes %q, status %d", notes, r.Status)
	}
	if r.ScriptRefused != 642 || r.PastLock != 0 || r.Breaches != 0 {
		t.Errorf("script %d past lock %d breaches %d, want 642 0 0", r.ScriptRefused, r.PastLock, r.Breaches)
	}
	table := renderTable(r)
	for _, want := range []string{"  async admission on the Redis Cluster, 8 bucket(s)\n", "  refused by the admission script  642\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("table has no %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "past lock") {
		t.Errorf("an async table speaks of the lock:\n%s", table)
	}
	r.UniqueKey = 2
	if notes := judge(&r, false, false, false); r.Status != 1 || r.Breaches != 2 || !strings.Contains(strings.Join(notes, "\n"), "let 2 duplicate(s) through") {
		t.Errorf("a unique-key rejection in async mode: status %d breaches %d notes %q", r.Status, r.Breaches, notes)
	}
}

// The matrix's async cells: every variant on every instance count, with
// harness loadtest's settings for it, after the sync settings.
func TestMatrixCells(t *testing.T) {
	cells := matrixCells([]string{"normal", "async"}, []string{"none", "lua"}, []string{"lua"}, []string{"1", "2"})
	if len(cells) != 4+2*len(asyncVariants) {
		t.Fatalf("%d cells, want %d", len(cells), 4+2*len(asyncVariants))
	}
	var names []string
	for _, c := range cells {
		names = append(names, c.run.cell())
	}
	want := []string{"none x 1 (normal)", "none x 2 (normal)", "lua x 1 (normal)", "lua x 2 (normal)",
		"lua x 1 (async, one Redis, 1 bucket)", "lua x 2 (async, one Redis, 1 bucket)",
		"lua x 1 (async, cluster, 1 bucket)", "lua x 2 (async, cluster, 1 bucket)",
		"lua x 1 (async, cluster, 8 buckets)", "lua x 2 (async, cluster, 8 buckets)"}
	if strings.Join(names, "; ") != strings.Join(want, "; ") {
		t.Errorf("cells\n%q\nwant\n%q", names, want)
	}
	last := cells[len(cells)-1]
	env := strings.Join(last.env, " ")
	for _, w := range []string{"ORDER_MODE=async", "REDIS=cluster", "BUCKETS=8", "MODE=lua", "INSTANCES=2", "DUPS=4", "SLOW=0"} {
		if !strings.Contains(" "+env+" ", " "+w+" ") {
			t.Errorf("env %q has no %s", env, w)
		}
	}
	if last.run.Expected != "holds" || last.dir != "lua-2-async-cluster-8" {
		t.Errorf("expected %q dir %q", last.run.Expected, last.dir)
	}
	if strings.Contains(strings.Join(cells[0].env, " "), "ORDER_MODE") {
		t.Errorf("a sync cell has an order mode: %q", cells[0].env)
	}

	r := fixedResult()
	r.OrderMode, r.Redis, r.Buckets, r.LockRefused, r.Invariant5 = "async", "cluster", 8, 0, "redis stock 0, buyers 200"
	judge(&r, false, true, true)
	m := last.run
	m.Result = &r
	JudgeCell(&m)
	if got, want := m.asyncRow(), "| cluster | 8 | lua | 2 | 1200 | 200 | 358 | 642 | 642 | 0 | - | no | yes | redis stock 0, buyers 200 | 3786.4 | 14.3 / 57.0 / 76.6 | holds (as expected) |"; got != want {
		t.Errorf("row\n%s\nwant\n%s", got, want)
	}
	rep := MatrixReport{Machine: map[string]string{}, Runs: []MatrixRun{m}}
	if text := renderMatrix(rep); !strings.Contains(text, "## Async admission") || !strings.Contains(text, m.asyncRow()) {
		t.Errorf("RESULTS.md has no async table:\n%s", text)
	}
}

func TestConfigLife(t *testing.T) {
	get := map[string]string{"SECKILL_MYSQL_DSN": "dsn", "SECKILL_REDIS_ADDR": "addr",
		"PAY_SHARE": "0.4", "CANCEL_SHARE": "0.2", "PAY_TIMEOUT": "2s", "SETTLE": "30"}
	c, err := ltConfigFromEnv(func(k string) string { return get[k] }, "/r", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !c.life() || c.PayShare != 0.4 || c.CancelShare != 0.2 || c.SettleS != 30 {
		t.Errorf("life settings: %+v", c)
	}
	if env := c.lifeEnv(); len(env) != 1 || env[0] != "SECKILL_PAY_TIMEOUT=2s" {
		t.Errorf("lifeEnv = %q", env)
	}
	c, _ = ltConfigFromEnv(func(k string) string {
		return map[string]string{"SECKILL_MYSQL_DSN": "d", "SECKILL_REDIS_ADDR": "a"}[k]
	}, "/r", time.Now())
	if c.life() || c.lifeEnv() != nil {
		t.Errorf("no life settings: %+v", c)
	}
}

// TestJudgeLife: some outcomes fail the run. They are a pay or cancel
// answered with anything but the business's codes, and an order left unpaid.
// No expiry and a unit sold twice fail it too.
func TestJudgeLife(t *testing.T) {
	base := func() Result {
		r := fixedResult()
		r.PayShare, r.CancelShare, r.PayTimeout = 0.4, 0.2, "2s"
		r.Life = map[string]int64{"pay_OK": 80, "pay_ORDER_EXPIRED": 2, "cancel_OK": 40, "cancel_ORDER_PAID": 1, "walk_away": 78}
		r.Paid, r.Expired, r.Cancelled = 80, 78, 40
		return r
	}
	r := base()
	if notes := judge(&r, false, false, false); r.Status != 0 {
		t.Fatalf("a good life run failed: %q", notes)
	}
	if got := renderTable(r); !strings.Contains(got, "cancel_OK=40 cancel_ORDER_PAID=1 pay_OK=80 pay_ORDER_EXPIRED=2 walk_away=78") {
		t.Errorf("table without the life answers:\n%s", got)
	}
	for name, spoil := range map[string]func(*Result){
		"internal":   func(r *Result) { r.Life["pay_INTERNAL"] = 1 },
		"pending":    func(r *Result) { r.Life["cancel_ORDER_PENDING"] = 1 },
		"transport":  func(r *Result) { r.Life["pay_TRANSPORT"] = 1 },
		"unpaid":     func(r *Result) { r.Unpaid = 1 },
		"due":        func(r *Result) { r.GivebackDue = 1 },
		"no expiry":  func(r *Result) { r.Expired = 0 },
		"sold twice": func(r *Result) { r.SoldTwice = 1 },
	} {
		r := base()
		spoil(&r)
		if judge(&r, false, false, false); r.Status != 1 || len(r.Failures) == 0 {
			t.Errorf("%s: status %d, failures %q, want a failure", name, r.Status, r.Failures)
		}
	}
}
