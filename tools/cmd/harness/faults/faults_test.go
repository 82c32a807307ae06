package faults

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/tools/cmd/harness/testbed"
)

func TestScheduleKeepsEachUsersPurchasesTogether(t *testing.T) {
	seq := schedule(50, 3, 7)
	if len(seq) != 150 {
		t.Fatalf("got %d slots, want 150", len(seq))
	}
	count := map[int]int{}
	for i := 0; i < len(seq); i += 3 {
		if seq[i] != seq[i+1] || seq[i] != seq[i+2] {
			t.Fatalf("slots %d..%d hold users %v, want one user", i, i+2, seq[i:i+3])
		}
		count[seq[i]]++
	}
	if len(count) != 50 {
		t.Fatalf("got %d users, want 50", len(count))
	}
	if !reflect.DeepEqual(seq, schedule(50, 3, 7)) {
		t.Fatal("the same seed gave another schedule")
	}
	if reflect.DeepEqual(seq, schedule(50, 3, 8)) {
		t.Fatal("another seed gave the same schedule")
	}
}

func TestTallyShots(t *testing.T) {
	shots := []shot{{Status: 200, Code: "OK"}, {Status: 409, Code: "SOLD_OUT"}, {Status: 409, Code: "DUPLICATE_ORDER"},
		{Status: 503, Code: "UNAVAILABLE"}, {Status: 500, Code: "INTERNAL"}, {Status: 0, Code: "TRANSPORT"}, {Status: 429, Code: "RATE_LIMITED"}}
	status, codes := tallyShots(shots)
	want := map[string]int{"200": 1, "409": 2, "503": 1, "500": 1, "other": 2}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("got status %v, want %v", status, want)
	}
	if codes["TRANSPORT"] != 1 || codes["SOLD_OUT"] != 1 || len(codes) != 7 {
		t.Errorf("got codes %v", codes)
	}
}

func TestClassify(t *testing.T) {
	users := []faultUser{{ID: 10}, {ID: 11}, {ID: 12}, {ID: 13}, {ID: 14}, {ID: 15}, {ID: 16}}
	shots := []shot{
		{User: 0, Code: "OK", OrderID: 100},         // written
		{User: 0, Code: "DUPLICATE_ORDER"},          // the same user again
		{User: 1, Code: "OK", OrderID: 101},         // reported failed
		{User: 2, Code: "OK", OrderID: 102},         // still pending
		{User: 3, Code: "OK", OrderID: 103},         // lost
		{User: 4, Code: "TRANSPORT"},                // bought, the client cannot know
		{User: 5, Code: "UNAVAILABLE", Status: 503}, // bought, told it failed
		{User: 6, Code: "OK", OrderID: 106},         // written, announced twice
		{User: 6, Code: "OK", OrderID: 106},
	}
	orders := map[int64]int64{100: 10, 104: 14, 105: 15, 106: 16}
	states := map[int64]string{101: "failed", 102: "pending", 103: "ORDER_NOT_FOUND"}
	c := classify(shots, users, orders, states)
	check := func(name string, got, want []int64) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("written", c.Written, []int64{100, 106})
	check("failed", c.Failed, []int64{101})
	check("pending", c.Pending, []int64{102})
	check("lost", c.Lost, []int64{103})
	check("ambiguous", c.Ambiguous, []int64{104})
	check("no 200 announced", c.NoAnnounce, []int64{105})
	// Invariant 4 is judged against the 200s (the failed one excepted) and
	// the ambiguous order: it then flags the lost, the pending and the
	// order its buyer was told had failed.
	f := model.Facts{InitialStock: 10, Stock: 6, Orders: orders, Announced: c.Announced, CheckAnnounced: true}
	var inv4 string
	for _, v := range f.Violations() {
		if v.Invariant == 4 {
			inv4 = v.Msg
		}
	}
	for _, want := range []string{"2 order ids answered with 200 are not in the database [102 103]", "1 orders in the database were never answered with 200 [105]"} {
		if !strings.Contains(inv4, want) {
			t.Errorf("invariant 4: got %q, want it to say %q", inv4, want)
		}
	}
}

func TestFirstAtAndBetween(t *testing.T) {
	s := time.Second
	shots := []shot{
		{Sent: 1 * s, Done: 2 * s, Status: 503},
		{Sent: 3 * s, Done: 4 * s, Status: 503},
		{Sent: 3 * s, Done: 5 * s, Status: 200, Code: "OK"},
		{Sent: 6 * s, Done: 7 * s, Status: 200, Code: "OK"},
	}
	if at, ok := firstAt(shots, func(x shot) bool { return x.Status == 503 && x.Done >= 3*s }); !ok || at != 4*s {
		t.Errorf("first 503 after 3s: got %v %v, want 4s", at, ok)
	}
	if _, ok := firstAt(shots, func(x shot) bool { return x.Status == 500 }); ok {
		t.Error("found a 500 in shots without one")
	}
	got := between(shots, 3*s, 5*s)
	if want := map[string]int{"503": 1, "200": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("between 3s and 5s: got %v, want %v", got, want)
	}
}

func TestJudgeCommon(t *testing.T) {
	tests := []struct {
		name         string
		r            CaseResult
		lostReported bool
		weak         bool
		verdict      string
		failures     int
	}{
		{"clean", CaseResult{Status: map[string]int{"200": 5}}, false, false, "pass", 0},
		{"oversold", CaseResult{Oversold: true, Orders: 11, InitialStock: 10}, false, false, "FAIL", 1},
		{"a 500", CaseResult{Status: map[string]int{"500": 2}}, false, false, "FAIL", 1},
		{"a transport error", CaseResult{Status: map[string]int{"other": 1}, Codes: map[string]int{"TRANSPORT": 1}}, false, false, "FAIL", 1},
		{"a transport error under a killed instance", CaseResult{Status: map[string]int{"other": 1}, Codes: map[string]int{"TRANSPORT": 1}, transportOK: true}, false, false, "pass", 0},
		{"a 429 under a killed instance", CaseResult{Status: map[string]int{"other": 2}, Codes: map[string]int{"TRANSPORT": 1, "RATE_LIMITED": 1}, transportOK: true}, false, false, "FAIL", 1},
		{"an ambiguous commit told as failure", CaseResult{NoAnnounce: 1}, false, false, "FAIL", 1},
		{"lost", CaseResult{Lost: 3}, false, false, "FAIL", 1},
		{"lost, measured only", CaseResult{Lost: 3}, true, false, "pass", 0},
		{"invariant 4 alone is judged through lost", CaseResult{Violations: []model.Violation{{Invariant: 4, Msg: "x"}}}, true, false, "pass", 0},
		{"invariant 3", CaseResult{Violations: []model.Violation{{Invariant: 3, Msg: "x"}}}, false, false, "FAIL", 1},
		{"weak demonstration shown", CaseResult{}, false, true, "shown", 0},
		{"weak demonstration breaking an invariant", CaseResult{Violations: []model.Violation{{Invariant: 1, Msg: "x"}}}, false, true, "FAIL", 1},
		{"could not run", CaseResult{Error: "boom"}, false, false, "ERROR", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			judgeCommon(&r, tt.lostReported)
			finishVerdict(&r, tt.weak)
			if r.Verdict != tt.verdict || len(r.Failures) != tt.failures {
				t.Errorf("got %s with failures %q, want %s with %d", r.Verdict, r.Failures, tt.verdict, tt.failures)
			}
		})
	}
}

// judged runs a case's judge on synthetic facts.
func judged(c faultCase, r CaseResult, marks map[string]time.Duration, shots []shot) CaseResult {
	r.LockMode, r.OrderMode = c.LockMode, c.OrderMode
	if r.Status == nil {
		r.Status, r.Codes = tallyShots(shots)
	}
	l := &loadRun{marks: marks}
	c.judge(judgement{s: &suite{}, e: &caseEnv{}, l: l, shots: shots, r: &r})
	finishVerdict(&r, c.Weak && r.measureOf("breach") == "shown")
	return r
}

func caseNamed(t *testing.T, name string) faultCase {
	t.Helper()
	cs, err := selectCases(faultCases, []string{name})
	if err != nil || len(cs) != 1 {
		t.Fatalf("case %s: %v", name, err)
	}
	return cs[0]
}

func TestJudgeRedlock(t *testing.T) {
	s := time.Second
	marks := map[string]time.Duration{"node killed": 2 * s, "node back": 4 * s}
	ok := shot{Sent: 3 * s, Done: 3*s + 1, Status: 200, Code: "OK"}
	refused := shot{Sent: 3 * s, Done: 3*s + 1, Status: 503, Code: "UNAVAILABLE"}
	after := shot{Sent: 5 * s, Done: 5*s + 1, Status: 200, Code: "OK"}
	tests := []struct {
		name    string
		mode    string
		shots   []shot
		unique  int64
		verdict string
	}{
		{"redsync grants while a node is down", "redlock-redsync", []shot{ok, after}, 0, "pass"},
		{"redsync grants nothing", "redlock-redsync", []shot{refused, after}, 0, "FAIL"},
		{"redsync double grant", "redlock-redsync", []shot{ok, after}, 1, "FAIL"},
		{"multi refuses while a node is down", "redlock-multi", []shot{refused, after}, 0, "pass"},
		{"multi grants with a node down", "redlock-multi", []shot{ok, refused, after}, 0, "FAIL"},
		{"multi never sells again", "redlock-multi", []shot{refused}, 0, "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := judged(caseNamed(t, tt.mode), CaseResult{UniqueKey: tt.unique, StockLeft: 5}, marks, tt.shots)
			if r.Verdict != tt.verdict {
				t.Errorf("got %s (%q, measures %v), want %s", r.Verdict, r.Failures, r.Measures, tt.verdict)
			}
		})
	}
}

func TestJudgeRedisAsyncMeasuresTheWindow(t *testing.T) {
	s := time.Second
	marks := map[string]time.Duration{"redis killed": 2 * s, "redis restarted": 3 * s, "operator rebuild": 7 * s, "back on sale after the rebuild": 8 * s}
	shots := []shot{
		{Sent: 1 * s, Done: 1*s + 1, Status: 200, Code: "OK", OrderID: 1},
		{Sent: 1 * s, Done: 1*s + 1, Status: 200, Code: "OK", OrderID: 2},
		{Sent: 3 * s, Done: 3*s + s/2, Status: 503, Code: "UNAVAILABLE"},
		{Sent: 5 * s, Done: 5 * s, Status: 503, Code: "UNAVAILABLE"},
		{Sent: 8 * s, Done: 8*s + s/2, Status: 200, Code: "OK", OrderID: 3},
	}
	c := caseNamed(t, "redis-async")
	r := CaseResult{StockLeft: 3, Status: map[string]int{"200": 3, "503": 2}}
	l := &loadRun{marks: marks}
	c.judge(judgement{e: &caseEnv{}, l: l, shots: shots, r: &r, cl: classification{Written: []int64{1, 3}, Failed: []int64{2}}})
	finishVerdict(&r, false)
	want := map[string]string{"unavailable": "5.0s", "recovery": "operator rebuild", "503 after restart": "2",
		"first 200 after the restart": "5.5s (goal ≤ 3s)",
		"200s before the crash":       "1 written, 1 reported failed, 0 lost"}
	for k, v := range want {
		if got := r.measureOf(k); got != v {
			t.Errorf("%s: got %q, want %q", k, got, v)
		}
	}
	if r.Verdict != "pass" {
		t.Errorf("got %s %q, want pass", r.Verdict, r.Failures)
	}
	// No 200 after the restart while stock remains: the voucher never
	// came back.
	r = CaseResult{StockLeft: 3, Status: map[string]int{}}
	c.judge(judgement{e: &caseEnv{}, l: &loadRun{marks: marks}, shots: shots[:4], r: &r})
	finishVerdict(&r, false)
	if r.Verdict != "FAIL" || r.measureOf("unavailable") != "until the end" {
		t.Errorf("got %s, unavailable %q, want FAIL, until the end", r.Verdict, r.measureOf("unavailable"))
	}
}

func TestJudgeFence(t *testing.T) {
	probes := func(late string) []shot {
		var out []shot
		for i := 0; i < fenceProbes; i++ {
			out = append(out, shot{Seq: -1, Inst: 1, Status: 200, Code: "OK", OrderID: int64(i + 1)},
				shot{Seq: -1, Inst: 0, Status: 409, Code: late})
		}
		return out
	}
	on := caseNamed(t, "fence-on")
	on.Env = append(on.Env, "SECKILL_FENCING=on")
	env := &caseEnv{env: on.Env}
	tests := []struct {
		name    string
		c       faultCase
		stale   int64
		past    string
		verdict string
	}{
		{"fencing refuses every late write", on, fenceProbes, "0 (transaction check 0, unique key 0, written 0)", "pass"},
		{"fencing let a late write through", on, fenceProbes - 1, "1 (transaction check 1, unique key 0, written 0)", "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CaseResult{StaleFence: tt.stale, Status: map[string]int{}}
			r.addMeasure("late writes past the lock", "%s", tt.past)
			tt.c.judge(judgement{e: env, l: &loadRun{}, shots: probes("DUPLICATE_ORDER"), r: &r})
			finishVerdict(&r, tt.c.Weak && r.measureOf("breach") == "shown")
			if r.Verdict != tt.verdict {
				t.Errorf("got %s %q, want %s", r.Verdict, r.Failures, tt.verdict)
			}
		})
	}
	off := caseNamed(t, "fence-off")
	for past, verdict := range map[string]string{"4 (transaction check 4, unique key 0, written 0)": "shown", "0 (transaction check 0, unique key 0, written 0)": "pass"} {
		r := CaseResult{Status: map[string]int{}}
		r.addMeasure("late writes past the lock", "%s", past)
		off.judge(judgement{e: &caseEnv{env: off.Env}, l: &loadRun{}, shots: probes("DUPLICATE_ORDER"), r: &r})
		finishVerdict(&r, off.Weak && r.measureOf("breach") == "shown")
		if r.Verdict != verdict {
			t.Errorf("fence-off with %s past the lock: got %s %q, want %s", past, r.Verdict, r.Failures, verdict)
		}
	}
}

func TestFaultLine(t *testing.T) {
	r := CaseResult{Name: "mariadb-sync", Requests: 1800, Status: map[string]int{"200": 300, "409": 1400, "503": 90, "500": 0, "other": 10},
		Orders: 300, Lost: 0, Consistent: true, Verdict: "pass"}
	r.addMeasure("down", "1.0s")
	got := faultLine(r)
	want := "mariadb-sync     req 1800  200  300  409 1400  503   90  500   0  other  10  orders 300  oversold no   lost   0  consistent yes  pass    down 1.0s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestFaultsReportRoundTrip(t *testing.T) {
	r := CaseResult{Name: "redis-async", LockMode: "lua", OrderMode: "async", Requests: 10, Status: map[string]int{"200": 4, "503": 6},
		Codes: map[string]int{"OK": 4, "UNAVAILABLE": 6}, Verdict: "FAIL", Failures: []string{"2 order(s) answered 200 are neither written nor reported failed (lost)"},
		Violations: []model.Violation{{Invariant: 4, Msg: "2 order ids answered with 200 are not in the database [1 2]"}}, Lost: 2}
	r.addMeasure("recovery", "operator rebuild")
	rep := Report{RunInfo: testbed.RunInfo{Date: "2026-11-23 07:00 UTC", Command: "make faults", Machine: "m"}, Cases: []CaseResult{r}}
	rep.Status = exitStatus(rep.Cases)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := testbed.WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	got, err := readFaultsReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rep) {
		t.Errorf("got %+v\nwant %+v", got, rep)
	}
	if got.Status != 1 {
		t.Errorf("got status %d, want 1", got.Status)
	}
	md := renderFaultsMarkdown(got)
	for _, want := range []string{"| redis-async | 10 | 4 | 0 | 6 | 0 | 0 | 0 | no | 2 | no | FAIL | recovery operator rebuild |",
		"- command: `make faults`", "- FAIL: 2 order(s) answered 200", "- violation: invariant 4:"} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		verdicts []string
		want     int
	}{
		{[]string{"pass", "shown"}, 0},
		{[]string{"pass", "ERROR"}, 2},
		{[]string{"ERROR", "FAIL"}, 1},
		{nil, 0},
	}
	for _, tt := range tests {
		var cs []CaseResult
		for _, v := range tt.verdicts {
			cs = append(cs, CaseResult{Verdict: v})
		}
		if got := exitStatus(cs); got != tt.want {
			t.Errorf("%v: got %d, want %d", tt.verdicts, got, tt.want)
		}
	}
}

func TestSelectCases(t *testing.T) {
	tests := []struct {
		names []string
		want  []string
		err   bool
	}{
		{nil, nil, false}, // all
		{[]string{"mariadb-sync"}, []string{"mariadb-sync"}, false},
		{[]string{"mariadb"}, []string{"mariadb-sync", "mariadb-async"}, false},
		{[]string{"fence", "redis-async"}, []string{"redis-async", "fence-on", "fence-off"}, false},
		{[]string{"expiry"}, []string{"expiry-kill-sync", "expiry-mariadb-sync", "expiry-redis-async"}, false},
		{[]string{"mariadb-syn"}, nil, true},
		{[]string{"nosuch"}, nil, true},
	}
	for _, tt := range tests {
		got, err := selectCases(faultCases, tt.names)
		if (err != nil) != tt.err {
			t.Errorf("%v: got error %v, want error %v", tt.names, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		if tt.want == nil {
			if len(got) != len(faultCases) {
				t.Errorf("no name: got %d cases, want all %d", len(got), len(faultCases))
			}
			continue
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if !reflect.DeepEqual(names, tt.want) {
			t.Errorf("%v: got %v, want %v", tt.names, names, tt.want)
		}
	}
}

func TestFaultSettings(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := faultSettingsFrom(env(nil), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	if s.Users != 600 || s.Dups != 3 || s.Stock != 300 || s.Duration != 9*time.Second || s.Rebuild != "if-needed" || s.Out != "/repo/tools/faults" || len(s.Cases) != 0 {
		t.Errorf("defaults: got %+v", s)
	}
	s, err = faultSettingsFrom(env(map[string]string{"CASE": "mariadb-sync, redis", "FAULTS_REBUILD": "never"}), "/repo")
	if err != nil || !reflect.DeepEqual(s.Cases, []string{"mariadb-sync", "redis"}) || s.Rebuild != "never" {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, bad := range []map[string]string{
		{"FAULTS_USERS": "x"}, {"FAULTS_STOCK": "600"}, {"FAULTS_DURATION": "9"}, {"FAULTS_REBUILD": "always"},
		{"CASE": "nosuch"}, {"FAULTS_BASE_PORT": "6373"}, // MariaDB would take 6379
	} {
		if _, err := faultSettingsFrom(env(bad), "/repo"); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestPortsAvoidTheSharedServices(t *testing.T) {
	p := portsFrom(27300)
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range p.all() {
		if seen[port] {
			t.Errorf("port %d twice in the layout", port)
		}
		seen[port] = true
	}
	for _, base := range []int{3300, 6373, 6378, 26384, 2175} {
		if err := portsFrom(base).check(); err == nil {
			t.Errorf("base %d: no error, but its layout takes a shared port", base)
		}
	}
}

func TestFaultsCommand(t *testing.T) {
	env := map[string]string{"CASE": "mariadb-sync", "FAULTS_USERS": "600", "FAULTS_DURATION": "12s"}
	got := faultsCommand(func(k string) string { return env[k] })
	if want := "make faults CASE=mariadb-sync FAULTS_DURATION=12s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInstanceEnvNamesOnlyPrivateDependencies(t *testing.T) {
	// What .ci/env.sh exports: the shared services, which must never reach
	// an instance of the suite (the harness also unsets them).
	shared := []string{"SECKILL_MYSQL_DSN=seckill:seckill@tcp(127.0.0.1:3306)/seckill", "SECKILL_REDIS_ADDR=127.0.0.1:6379",
		"SECKILL_REDLOCK_ADDRS=127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382", "SECKILL_ZK_ADDRS=127.0.0.1:2181"}
	deps := []privateDeps{
		{DSN: "seckill:seckill@tcp(127.0.0.1:27306)/seckill", Redis: "127.0.0.1:40001"},
		{DSN: "seckill:seckill@tcp(127.0.0.1:27306)/seckill", Sentinels: []string{"127.0.0.1:40002", "127.0.0.1:40003"}, Master: "faults"},
		{DSN: "seckill:seckill@tcp(127.0.0.1:27306)/seckill", Redis: "127.0.0.1:40001", Redlock: []string{"127.0.0.1:40004", "127.0.0.1:40005", "127.0.0.1:40006"}},
	}
	for _, c := range faultCases {
		for _, d := range deps {
			// exec.Cmd keeps the last value of a name: the instance
			// environment is appended after the harness's.
			final := map[string]string{}
			for _, kv := range append(append([]string{}, shared...), instanceEnv(c, d)...) {
				k, v, _ := strings.Cut(kv, "=")
				final[k] = v
			}
			for _, k := range []string{"SECKILL_MYSQL_DSN", "SECKILL_REDIS_ADDR", "SECKILL_REDLOCK_ADDRS", "SECKILL_ZK_ADDRS",
				"SECKILL_REDIS_SENTINEL_ADDRS", "SECKILL_REDIS_MASTER", "SECKILL_REDIS_CLUSTER_ADDRS"} {
				v, ok := final[k]
				if !ok {
					t.Errorf("%s: %s is not set", c.Name, k)
				}
				for port := range sharedPorts {
					if strings.Contains(v, ":"+strconv.Itoa(port)+")") || strings.Contains(v, ":"+strconv.Itoa(port)+",") || strings.HasSuffix(v, ":"+strconv.Itoa(port)) {
						t.Errorf("%s: %s=%s names the shared port %d", c.Name, k, v, port)
					}
				}
			}
			if (final["SECKILL_REDIS_ADDR"] != "") == (final["SECKILL_REDIS_SENTINEL_ADDRS"] != "") {
				t.Errorf("%s: SECKILL_REDIS_ADDR=%q and SECKILL_REDIS_SENTINEL_ADDRS=%q: exactly one must be set",
					c.Name, final["SECKILL_REDIS_ADDR"], final["SECKILL_REDIS_SENTINEL_ADDRS"])
			}
		}
	}
}

// TestExpiryCasesExpire: every expiry case sets a short pay timeout, so
// that orders expire during the load, and waits for the expiry to settle.
func TestExpiryCasesExpire(t *testing.T) {
	n := 0
	for _, c := range faultCases {
		if !strings.HasPrefix(c.Name, "expiry-") {
			continue
		}
		n++
		if !c.Expiry || c.judge == nil || c.fault == nil {
			t.Errorf("%s: Expiry %v, judge or fault missing", c.Name, c.Expiry)
		}
		timeout := ""
		for _, kv := range c.Env {
			if v, ok := strings.CutPrefix(kv, "SECKILL_PAY_TIMEOUT="); ok {
				timeout = v
			}
		}
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 || d > 3*time.Second {
			t.Errorf("%s: SECKILL_PAY_TIMEOUT=%q, want at most 3s (a third of the load)", c.Name, timeout)
		}
	}
	if n != 3 {
		t.Errorf("%d expiry cases, want 3", n)
	}
}
