package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBenchRatioAndVerdicts(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"1843.2", "4826.5", "0.38"},
		{"52240", "52241", "1.00"},
		{"", "10", "-"},
		{"10", "", "-"},
		{"10", "0", "-"},
	}
	for _, c := range cases {
		if got := benchRatio(c.a, c.b); got != c.want {
			t.Errorf("benchRatio(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
	if !atLeast("0.60", 0.6) || atLeast("0.59", 0.6) || atLeast("-", 0) || atLeast("", 0) {
		t.Error("atLeast")
	}
	if !atMost("4.41", 5) || atMost("5.01", 5) || atMost("-", 5) {
		t.Error("atMost")
	}
	if benchVerdict(true) != "yes" || benchVerdict(false) != "**no**" {
		t.Error("benchVerdict")
	}
	if benchMS("16550") != "16.55" || benchMS("") != "-" || fmtRate("1843.6") != "1844" || fmtRate("") != "0" {
		t.Error("benchMS / fmtRate")
	}
}

// fixedBench is a bench holding the figures of a run of the shape of
// tools/bench/RESULTS.md of 2026-11-23 04:50 (rounded).
func fixedBench() *bench {
	b := newBench("/repo")
	b.cfg = benchConfig{Duration: 10, Threads: 2, Conns: 32, RedisN: 150000, SlapTxns: 500, Port: 18181,
		OrderModes: []string{"sync", "async"}, LockModes: []string{"lua"}, AsyncLockModes: []string{"lua"},
		Out: "/repo/tools/bench/out/x", Results: "/repo/tools/bench/RESULTS.md"}
	b.runs["noop"] = benchFigures{"rps": "52241.2", "p50_us": "510", "p99_us": "8040", "share": "63 / 28 / 0 / 0", "rest": "0", "cpu_server": "24"}
	b.runs["slap"] = benchFigures{"rps": "4826.5", "txns": "16000", "secs": "3.315"}
	b.runs["insert"] = benchFigures{"rps": "18380.2", "txns": "64000", "secs": "3.482"}
	b.runs["admit"] = benchFigures{"rps": "71090.05", "depth": "1", "admitted": "149990", "voucher": "9000000012345"}
	b.runs["admit-P12"] = benchFigures{"rps": "190120.4", "depth": "12", "admitted": "149989", "voucher": "9000000012345"}
	b.runs["soldout"] = benchFigures{"requests": "526005", "rps": "52240.1", "p50_us": "500", "p99_us": "11070",
		"code_SOLD_OUT": "526005", "status_409": "526005", "orders": "1", "share": "62 / 29 / 1 / 0", "rest": "0",
		"cpu_server": "23", "cpu_mariadb": "0", "cpu_redis": "0", "db_stmts": "0.0 / 0.0 / 0.0"}
	b.runs["sync-lua"] = benchFigures{"requests": "18484", "rps": "1843.2", "p50_us": "16550", "p99_us": "49640",
		"status_200": "18484", "orders": "18515", "inflight": "32", "share": "34 / 4 / 37 / 5", "rest": "14",
		"cpu_server": "370", "cpu_mariadb": "393", "cpu_redis": "49", "db_stmts": "5.0 / 0.0 / 0.0", "group_mean": "7.52", "groups": "2458"}
	b.runs["sync-lua-pertxn"] = benchFigures{"requests": "14500", "rps": "1450.0", "p99_us": "61200", "status_200": "14500",
		"orders": "14500", "cpu_server": "404", "cpu_mariadb": "432", "group_mean": "1.00", "groups": "14500"}
	b.runs["async-lua"] = benchFigures{"requests": "157319", "rps": "15608.3", "status_200": "157319", "orders": "157335",
		"drain_rate": "13677", "cpu_server_order": "71.3", "cpu_redis_order": "28.9", "pipeline_mean": "11.62"}
	b.runs["async-lua-nodrain"] = benchFigures{"requests": "170001", "rps": "17000.2", "status_200": "170001", "orders": "170001",
		"written_load": "0", "drain_rate": "6021", "batch_mean": "99.8", "batches": "1704", "pipeline_mean": "12.40"}
	b.runs["k6-async-lua"] = benchFigures{"rate": "921", "p99_us": "4410", "requests": "9211", "status_200": "9211", "dropped": "0"}
	b.runs["k6-async-lua-noop"] = benchFigures{"rate": "921", "p99_us": "3000", "requests": "9211", "status_200": "9210", "dropped": "2"}
	b.info["rel_space"] = "600000"
	b.rows = []string{"sync-lua", "sync-lua-pertxn", "async-lua", "async-lua-nodrain"}
	b.k6Runs = []string{"k6-async-lua"}
	return b
}

func TestBenchTargets(t *testing.T) {
	b := fixedBench()
	got := b.targets()
	want := benchTargets{T1: "0.38", T2: "1.00", G1: "0.38", GP: "0.30", A1: "8.47", A2: "0.08", A3: "0.74", A4: "1.47", A5: "3", K6Failed: "1", K6Dropped: "2", C1: "71.3", C2: "28.9",
		N1: "0.92", AR: "async-lua", KR: "k6-async-lua", NR: "async-lua-nodrain", AdmitP: "admit-P12", DrainR: "13677"}
	if got != want {
		t.Fatalf("targets = %+v\nwant %+v", got, want)
	}
	// No pipelining depth in the server's /metrics: no admit-P limit, A2
	// not measured (never against depth 1).
	b.runs["async-lua"]["pipeline_mean"] = ""
	if got = b.targets(); got.AdmitP != "" || got.A2 != "-" {
		t.Fatalf("no depth: AdmitP %q, A2 %q; want none", got.AdmitP, got.A2)
	}
	b.runs["async-lua"]["pipeline_mean"] = "11.62"
	// Kept up: no drain rate, the rate during the load stands for it.
	b.runs["async-lua"]["drain_rate"] = ""
	got = b.targets()
	if got.DrainR != "15734" || !got.DrainKeptUp || got.A3 != "0.86" {
		t.Fatalf("kept up: %+v", got)
	}
	// No no-op run at the k6 rate: neither k6 target is measured.
	noop := b.runs["k6-async-lua-noop"]
	delete(b.runs, "k6-async-lua-noop")
	if got = b.targets(); got.A4 != "-" || got.A5 != "-" || got.K6Failed != "-" || got.K6Dropped != "-" {
		t.Fatalf("no k6 no-op run: A4 %q, A5 %q, failed %q, dropped %q, want -", got.A4, got.A5, got.K6Failed, got.K6Dropped)
	}
	b.runs["k6-async-lua-noop"] = noop
	// No CPU per order (no async run): not measured.
	delete(b.runs, "async-lua")
	if got = b.targets(); got.C1 != "-" || got.C2 != "-" {
		t.Fatalf("no async run: C1 %q, C2 %q, want - and -", got.C1, got.C2)
	}
}

// The k6 rate is a quarter of the async maximum, at most k6MaxRate.
func TestK6Rate(t *testing.T) {
	for in, want := range map[string]string{"15608.3": "1500", "5000": "1250", "12000": "1500", "3": "", "": ""} {
		if got := k6Rate(in); got != want {
			t.Errorf("k6Rate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBenchRender(t *testing.T) {
	b := fixedBench()
	b.violations = []string{"sync-lua: wrk err_read=3"}
	md := b.render(b.targets(), func(string) string { return "" })
	mdHolds(t, md,
		"| soldout | sync | lua | 526005 | 52240 | 0.50 | 11.07 |  | SOLD_OUT 526005 | 1 |  | ok | - | 1.00 | 62 / 29 / 1 / 0 / 0 | 23 / 0 / 0 | 0.0 / 0.0 / 0.0 |\n",
		"| sync-lua | sync | lua | 18484 | 1843 | 16.55 | 49.64 | 18484 | 0 | 18515 | 32 | **1 violated** | 0.38 | 0.04 | 34 / 4 / 37 / 5 / 14 | 370 / 393 / 49 | 5.0 / 0.0 / 0.0 |\n",
		"| 4 | sync `lua` req/s ÷ mariadb-slap txn/s | 0.38 | ≥ 0.6 | **no** |\n",
		"| 4, 13 | sold-out req/s ÷ no-op req/s | 1.00 | ≥ 0.9 | yes |\n",
		"| 21 | sync `lua` with group commit req/s ÷ mariadb-slap txn/s | 0.38 | ≥ 1.0 | **no** |\n",
		"| sync-lua | 1843 | 0.38 | 49.64 | 7.52 (2458) | 370 / 393 |\n",
		"| sync-lua-pertxn | 1450 | 0.30 | 61.20 | 1 (off) | 404 / 432 |\n",
		"| sync-lua-pertxn | sync | lua | 14500 | 1450 |",
		"| 5, 13 | async req/s ÷ EVALSHA seckill.lua ops/s at the server's pipelining depth (admit-P12: 15608 ÷ 190120; -P 12, the server's mean 11.62 admissions per round trip) | 0.08 | ≥ 0.4 | **no** |\n",
		"| 13 | admission with the consumers writing ÷ admission without them (async-lua req/s ÷ async-lua-nodrain req/s: 15608 ÷ 17000) | 0.92 | ≥ 0.8 | yes |\n",
		"| async admission (repository/redisstore/scripts/seckill.lua: window, duplicate and stock checks; DECR, SADD, XADD, SET EX), depth 1 (no -P) | redis-benchmark EVALSHA | 71090 ops/s | - | - | scratch voucher 9000000012345, scratch stream bench:orders; 149990 of 150000 calls admitted",
		"| the same at the server's pipelining depth (admit-P12: -P 12, async-lua's mean 11.62 admissions per round trip, rounded) | redis-benchmark EVALSHA | 190120 ops/s | - | - | the same scratch keys; 149989 of 150000 calls admitted |\n",
		"| async-lua-nodrain | async | lua | 170001 | 17000 |",
		"| async-lua-nodrain | 170001 | 0 |",
		" | 6021 orders/s | - | 99.8 (1704) |",
		"| 5 | async req/s ÷ sync `lua` req/s (async-lua: 15608 ÷ 1843) | 8.47 | ≥ 8 | yes |\n",
		"| 5 | drain orders/s ÷ single-row INSERT rows/s (13677 ÷ 18380) | 0.74 | ≥ 1 | **no** |\n",
		"| 36 | k6 p99 at 921 req/s (a quarter of the async maximum, at most 1500): async ÷ the no-op endpoint (4.41 ÷ 3.00 ms) | 1.47 | ≤ 1.5 | yes |\n",
		"| 36 | k6 failures and dropped iterations, async and no-op at that rate (failed 1, dropped 2) | 3 | 0 | **no** |\n",
		"at a quarter of the async req/s of this\nrun, at most 1500 req/s",
		"| 13 | server CPU per admitted async order, us (async-lua: /proc utime + stime over the wrk run ÷ its 200s) | 71.3 | ≤ 60 | **no** |\n",
		"| 13 | Redis CPU per admitted async order, us (async-lua, the same way) | 28.9 | ≤ 30 | yes |\n",
		"| 4, 5 | invariant violations, all runs | 1 | 0 | **no** |\n",
		"\nViolations:\n\n- sync-lua: wrk err_read=3\n",
		"| order transaction (BEGIN; UPDATE stock; INSERT order; COMMIT) | mariadb-slap | 4826 txn/s | - | - | 16000 transactions in 3.315 s,",
		"| k6-async-lua-noop | 921 |",
		"keys bench:lock:000000000000 .. 000000599999 are set",
	)
	for _, section := range []string{"# Benchmark results", "## Machine", "## Limits", "## The seckill", "## Sync group commit", "## Async mode",
		"### Drain", "### Latency", "## Targets, as ratios in this run", "## Commands"} {
		if !strings.Contains(md, "\n"+section) && !strings.HasPrefix(md, section) {
			t.Errorf("RESULTS.md lacks section %q", section)
		}
	}
	if strings.Contains(md, "/repo/") {
		t.Error("paths are not relative to the repository")
	}
	// results.json: targets with verdicts, runs with numbers.
	j := b.resultsJSON(b.targets())
	if len(j.Targets) != 12 || j.Targets[0].Met || !j.Targets[1].Met || *j.Targets[0].Measured != 0.38 || j.Targets[10].Met {
		t.Errorf("targets: %+v", j.Targets)
	}
	if tg := j.Targets[11]; tg.Name != targetGroupSlap || tg.Met || *tg.Measured != 0.38 || tg.Required != 1 || tg.Issue != "21" {
		t.Errorf("group commit target: %+v", tg)
	}
	if tg := j.Targets[1]; tg.Name != TargetSoldoutNoop || tg.Required != 0.9 || tg.Issue != "4, 13" {
		t.Errorf("sold-out target: %+v", tg)
	}
	if tg := j.Targets[3]; tg.Name != TargetAsyncAdmit || tg.Met || *tg.Measured != 0.08 || tg.Required != 0.4 {
		t.Errorf("async ÷ EVALSHA target: %+v", tg)
	}
	if tg := j.Targets[5]; tg.Name != TargetK6P99 || !tg.Met || *tg.Measured != 1.47 || tg.Op != "<=" || tg.Required != 1.5 || tg.Issue != "36" {
		t.Errorf("k6 p99 target: %+v", tg)
	}
	if tg := j.Targets[6]; tg.Name != TargetK6Faults || tg.Met || *tg.Measured != 3 || tg.Op != "<=" || tg.Required != 0 {
		t.Errorf("k6 failures target: %+v", tg)
	}
	if tg := j.Targets[9]; tg.Name != TargetNoDrain || !tg.Met || *tg.Measured != 0.92 || tg.Op != ">=" || tg.Required != 0.8 {
		t.Errorf("no-drain target: %+v", tg)
	}
	var limits []string
	for _, l := range j.Limits {
		limits = append(limits, l.Name)
	}
	if !reflect.DeepEqual(limits, []string{"noop", "admit", "admit-P12", "slap", "insert"}) {
		t.Errorf("limits: %v", limits)
	}
	if l := j.Limits[2]; l.Figures["depth"] != 12.0 || l.Figures["calls"] != 150000 || l.Figures["admitted"] != 149989.0 {
		t.Errorf("admit-P12 limit: %+v", l)
	}
	if r := j.Runs[4]; r.Name != "async-lua-nodrain" || r.OrderMode != "async" || r.LockMode != "lua" || r.Figures["pipeline_mean"] != 12.4 {
		t.Errorf("runs[4]: %+v", r)
	}
	if tg := j.Targets[7]; tg.Name != targetServerCPU || tg.Met || *tg.Measured != 71.3 || tg.Op != "<=" || tg.Required != 60 {
		t.Errorf("server CPU target: %+v", tg)
	}
	if tg := j.Targets[8]; tg.Name != targetRedisCPU || !tg.Met || *tg.Measured != 28.9 || tg.Required != 30 {
		t.Errorf("Redis CPU target: %+v", tg)
	}
	if j.AdmissionProfile != nil || strings.Contains(md, "## Admission profile") {
		t.Error("admission profile shown without one")
	}
	if j.Runs[1].Name != "sync-lua" || j.Runs[1].Figures["rps"] != 1843.2 || j.Runs[1].OK {
		t.Errorf("runs[1]: %+v", j.Runs[1])
	}
	if !reflect.DeepEqual(j.Runs[1].Figures["share_parts"], []float64{34, 4, 37, 5}) {
		t.Errorf("share_parts: %v", j.Runs[1].Figures["share_parts"])
	}
	if _, err := json.Marshal(j); err != nil {
		t.Fatal(err)
	}
}

func TestBenchOrderCPU(t *testing.T) {
	a := cpuSample{Server: 1000, Redis: 100}
	b := cpuSample{Server: 1150, Redis: 160, MariaDB: 999}
	// 150 ticks at 100 Hz = 1.5 s of server CPU over 20,000 orders: 75 us.
	got := orderCPUFigures(a, b, 20000, 100)
	want := benchFigures{"cpu_server_order": "75.0", "cpu_redis_order": "30.0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("orderCPUFigures = %v, want %v", got, want)
	}
	if got := orderCPUFigures(a, b, 0, 100); len(got) != 0 {
		t.Fatalf("no orders: %v, want no figures", got)
	}
}

func TestBenchAdmissionProfile(t *testing.T) {
	b := fixedBench()
	b.cfg.AdmissionProfile = true
	if got := b.cfg.admissionRun(); got != "async-lua" {
		t.Fatalf("admissionRun = %q, want async-lua", got)
	}
	if got := b.cfg.profilesDir(); got != "/repo/tools/bench/profiles" {
		t.Fatalf("profilesDir = %q", got)
	}
	for _, c := range []benchConfig{
		{AdmissionProfile: false, OrderModes: []string{"async"}, AsyncLockModes: []string{"lua"}},
		{AdmissionProfile: true, OrderModes: []string{"sync"}, AsyncLockModes: []string{"lua"}},
		{AdmissionProfile: true, OrderModes: []string{"async"}},
	} {
		if got := c.admissionRun(); got != "" {
			t.Errorf("%+v: admissionRun = %q, want none", c, got)
		}
	}
	const flat = "      flat  flat%   sum%        cum   cum%\n     1.20s 12.00% 12.00%      1.20s 12.00%  runtime.futex"
	b.admission = &admissionProfile{Run: "async-lua", Dir: "/repo/tools/bench/profiles", Secs: "8",
		Files:   []string{"async-lua.cpu.pprof", "async-lua.allocs-before.pprof", "async-lua.allocs.pprof", "async-lua.top.txt"},
		CPUFlat: flat, CPUCum: flat, AllocSpace: "", CPUServerOrder: "71.3", CPURedisOrder: "28.9", Orders: "157319"}
	md := b.render(b.targets(), func(string) string { return "" })
	mdHolds(t, md,
		"\n## Admission profile: async-lua\n",
		"over 8 s in the middle",
		"server 71.3 us, Redis 28.9 us\n(157319 orders). The files, in tools/bench/profiles: async-lua.cpu.pprof,",
		"CPU, flat, top 20:\n\n```\n"+flat+"\n```\n",
		"CPU, cumulative, top 20:",
	)
	if strings.Contains(md, "Bytes allocated") {
		t.Error("an empty allocation table is shown")
	}
	j := b.resultsJSON(b.targets())
	if j.AdmissionProfile == nil || j.AdmissionProfile.Run != "async-lua" || len(j.AdmissionProfile.Files) != 4 ||
		j.AdmissionProfile.Files[0] != "tools/bench/profiles/async-lua.cpu.pprof" {
		t.Errorf("results.json admissionProfile: %+v", j.AdmissionProfile)
	}
	txt := admissionTopText(b.admission)
	for _, want := range []string{
		"CPU per admitted order in the run: server 71.3 us, Redis 28.9 us (157319 orders).",
		"== CPU, flat (go tool pprof -top -nodecount=20 async-lua.cpu.pprof)\n\n" + flat + "\n",
		"== bytes allocated during the wrk run (go tool pprof -top -nodecount=20 -sample_index=alloc_space -base async-lua.allocs-before.pprof async-lua.allocs.pprof)\n\n(no profile)\n",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("top.txt lacks %q:\n%s", want, txt)
		}
	}
}

func TestBenchProc(t *testing.T) {
	stat := "1234 (seckill (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 1000 0 0"
	if n, ok := procTicks(stat); !ok || n != 325 {
		t.Fatalf("procTicks = %d, %v", n, ok)
	}
	busy, total, ok := machineTicks("cpu  100 5 50 800 40 0 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	if !ok || total != 1000 || busy != 160 {
		t.Fatalf("machineTicks = %d, %d, %v", busy, total, ok)
	}
	a := cpuSample{Server: 1000, MariaDB: 500, Redis: 100, Client: 0, Busy: 10000, Total: 20000, DB: [3]float64{100, 0, 0}}
	b := cpuSample{Server: 1680, MariaDB: 1240, Redis: 200, Client: 80, Busy: 11800, Total: 22000, DB: [3]float64{10100, 0, 0}}
	f := meterFigures(a, b, 2000, 100)
	want := benchFigures{"busy": "90", "rest": "10", "share": "34 / 4 / 37 / 5", "cpu_server": "3400", "cpu_client": "400",
		"cpu_mariadb": "3700", "cpu_redis": "500", "db_stmts": "5.0 / 0.0 / 0.0"}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("meterFigures = %v\nwant %v", f, want)
	}
	// No responses, no time: zeros and empty cells.
	f = meterFigures(a, a, 0, 100)
	if f["share"] != "" || f["cpu_server"] != "0" || f["db_stmts"] != "" || f["busy"] != "0" {
		t.Fatalf("empty meter: %v", f)
	}
	// More accounted than busy (ticks sampled at different instants): rest 0.
	b.Busy = a.Busy + 100
	if f := meterFigures(a, b, 1, 100); f["rest"] != "0" {
		t.Fatalf("rest = %s", f["rest"])
	}
}

func TestBenchParsers(t *testing.T) {
	rps, p50, p99, ok := redisBenchCSV(`"EVALSHA","107604.30","0.278","0.048","0.263","0.375","0.471","2.671"`)
	if !ok || rps != "107604.30" || p50 != "263" || p99 != "471" {
		t.Fatalf("redisBenchCSV = %s %s %s %v", rps, p50, p99, ok)
	}
	if _, _, _, ok := redisBenchCSV(`ERROR`); ok {
		t.Fatal("redisBenchCSV accepted garbage")
	}
	if s := slapSeconds("Benchmark\n\tAverage number of seconds to run all queries: 3.315 seconds\n"); s != "3.315" {
		t.Fatalf("slapSeconds = %q", s)
	}
	f := wrkFigures("Running 10s test\nBENCH requests 100\nBENCH status_200 99\nBENCH code_SOLD_OUT 1\n")
	if f["requests"] != "100" || f["status_200"] != "99" || benchRefusals(f) != "SOLD_OUT 1" {
		t.Fatalf("wrkFigures = %v", f)
	}
	f["status_409"], f["status_503"], f["non2xx3xx"] = "3", "2", "5"
	if n := non2xxCounted(f); n != 5 {
		t.Fatalf("non2xxCounted = %d", n)
	}
	if benchRefusals(benchFigures{}) != "0" {
		t.Fatal("benchRefusals of none")
	}
	metrics := `seckill_http_request_duration_seconds_bucket{method="POST",route="/voucher-order/seckill/:id",status="200",le="0.0005"} 10
seckill_http_request_duration_seconds_bucket{method="POST",route="/voucher-order/seckill/:id",status="200",le="0.001"} 900
seckill_http_request_duration_seconds_bucket{method="POST",route="/voucher-order/seckill/:id",status="200",le="0.005"} 995
seckill_http_request_duration_seconds_bucket{method="POST",route="/voucher-order/seckill/:id",status="200",le="+Inf"} 1000
seckill_http_request_duration_seconds_bucket{method="GET",route="/debug/noop",status="200",le="+Inf"} 7
seckill_async_batch_size_sum 15720
seckill_async_batch_size_count 1576
seckill_admission_pipeline_size_bucket{le="64"} 1000
seckill_admission_pipeline_size_sum 11616
seckill_admission_pipeline_size_count 1000
seckill_sync_group_size_sum 18484
seckill_sync_group_size_count 2458
`
	got := promHistogram(metrics, "/voucher-order/seckill/:id")
	want := benchFigures{"srv_within5": "99.50", "srv_p99_le": "5", "batch_mean": "10.0", "batches": "1576",
		"pipeline_mean": "11.62", "pipelines": "1000", "group_mean": "7.52", "groups": "2458"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("promHistogram = %v, want %v", got, want)
	}
	// The depth of redis-benchmark -P: the mean rounded, at least 1.
	for mean, want := range map[string]int{"11.62": 12, "11.49": 11, "1.00": 1, "0.40": 1, "": 0, "x": 0} {
		if got := pipelineDepth(mean); got != want {
			t.Errorf("pipelineDepth(%q) = %d, want %d", mean, got, want)
		}
	}
	if admitPName("11.62") != "admit-P12" || admitPName("") != "" {
		t.Errorf("admitPName: %q, %q", admitPName("11.62"), admitPName(""))
	}
	for name, want := range map[string][2]string{
		"sync-lua": {"sync", "lua"}, "async-lua-nodrain": {"async", "lua"}, "profile-async-redsync": {"async", "redsync"},
		"async-zookeeper-nodrain": {"async", "zookeeper"}, "sync-lua-pertxn": {"sync", "lua"},
		"sync-lua-x2": {"sync", "lua"}, "async-lua-x2": {"async", "lua"},
	} {
		if om, lm := runModes(name); om != want[0] || lm != want[1] {
			t.Errorf("runModes(%q) = %q, %q; want %q", name, om, lm, want)
		}
	}
	sum := `{"metrics":{"iterations":{"values":{"count":9211}},"http_reqs":{"values":{"count":9211,"rate":921.04}},
"http_req_duration":{"values":{"p(50)":0.5305,"p(90)":0.92,"p(95)":1.36,"p(99)":4.4149,"max":16.75}},
"vus_max":{"values":{"max":128}},"status_200":{"values":{"count":9211}}}}`
	kf, err := k6Figures([]byte(sum))
	if err != nil {
		t.Fatal(err)
	}
	if kf["p50_us"] != "531" || kf["p99_us"] != "4415" || kf["rps"] != "921.04" || kf["dropped"] != "0" ||
		kf["status_200"] != "9211" || kf["sent"] != "9211" || kf["code_other"] != "" {
		t.Fatalf("k6Figures = %v", kf)
	}
}

func TestBenchConfig(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	now := time.Date(2026, 11, 23, 4, 50, 13, 0, time.UTC)
	c, err := benchConfigFromEnv(getenv, "/repo", now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != 10 || c.Conns != 32 || c.Users != 300000 || c.AsyncUsers != 400000 || c.SkipUsers != 5000 ||
		len(c.LockModes) != 10 || c.Out != "/repo/tools/bench/out/20261123-045013" || c.Results != "/repo/tools/bench/RESULTS.md" || !c.wantAsync() {
		t.Fatalf("defaults: %+v", c)
	}
	for k, v := range map[string]string{"BENCH_DURATION": "0", "BENCH_CONNS": "1", "BENCH_K6_RATE": "x", "BENCH_ORDER_MODES": "sync batch", "BENCH_PORT": "-1"} {
		env = map[string]string{k: v}
		if _, err := benchConfigFromEnv(getenv, "/repo", now); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
	if !c.AdmissionProfile {
		t.Error("BENCH_ADMISSION_PROFILE is on by default")
	}
	env = map[string]string{"BENCH_ADMISSION_PROFILE": "0"}
	if c, err := benchConfigFromEnv(getenv, "/repo", now); err != nil || c.AdmissionProfile {
		t.Fatalf("BENCH_ADMISSION_PROFILE=0: %+v %v", c, err)
	}
	env = map[string]string{"BENCH_SKIP_USERS": "0", "BENCH_ORDER_MODES": "sync"}
	if c, err := benchConfigFromEnv(getenv, "/repo", now); err != nil || c.SkipUsers != 0 || c.wantAsync() {
		t.Fatalf("BENCH_SKIP_USERS=0: %+v %v", c, err)
	}
}

func TestBenchFactsViolations(t *testing.T) {
	if v := factsViolations(voucherFacts{Initial: 10, Stock: 5, Orders: 5, Distinct: 5}); len(v) != 0 {
		t.Fatalf("consistent facts: %v", v)
	}
	v := factsViolations(voucherFacts{Initial: 10, Stock: 5, Orders: 6, Distinct: 5})
	if len(v) != 2 {
		t.Fatalf("want invariants 2 and 3: %v", v)
	}
	v = factsViolations(voucherFacts{Initial: 10, Stock: 5, Orders: 5, Distinct: 5, Async: true, RedisStock: 4, Pending: 0, Buyers: 5})
	if len(v) != 1 || !strings.HasPrefix(v[0], "invariant 5") {
		t.Fatalf("want invariant 5: %v", v)
	}
}

// TestBenchClusterBlock: the Redis Cluster block in RESULTS.md (the
// busiest master's projection) and in results.json (its runs and nodes,
// which docs/bench-cluster.svg draws).
func TestBenchClusterBlock(t *testing.T) {
	if got := CoreRate(16.8); got != 59500 {
		t.Errorf("coreRate(16.8): got %v, want 59500", got)
	}
	if got := CoreRate(0); got != 0 {
		t.Errorf("coreRate(0): got %v, want 0", got)
	}
	roles := []string{"master", "master", "replica", "master"}
	us := []float64{2.2, 13.3, 30, 14.2}
	node, v, ok := BusiestMaster(roles, func(i int) (float64, bool) { return us[i], i != 1 })
	if node != 3 || v != 14.2 || !ok {
		t.Errorf("busiestMaster: got %d, %v, %v; want 3, 14.2, true (the replica and the absent figure left out)", node, v, ok)
	}
	if _, _, ok := BusiestMaster(roles, func(int) (float64, bool) { return 0, false }); ok {
		t.Error("busiestMaster without figures: ok")
	}

	b := fixedBench()
	b.runs["async-lua"]["cpu_redis_order"] = "16.8"
	b.clusterNodes_ = []clusterNode{{Addr: "127.0.0.1:7001", Role: "master"}, {Addr: "127.0.0.1:7002", Role: "master"}, {Addr: "127.0.0.1:7004", Role: "replica"}}
	b.clusterRows = []string{"cluster-2"}
	b.runs["cluster-2"] = benchFigures{"buckets": "2", "rps": "17468.2", "status_200": "174680", "orders": "174700",
		"cpu_server_order": "46.1", "cpu_redis_order": "43.4", "cpu_node0_order": "14.2", "cpu_node1_order": "13.3", "cpu_node2_order": "15.9"}
	md := b.render(b.targets(), func(string) string { return "" })
	mdHolds(t, md, "(one Redis, async-lua: 16.8 us,\n59500/s)",
		"| per node (7001 master / 7002 master / 7004 replica) | busiest master on a core, orders/s |\n",
		"| 46.1 | 43.4 | 14.2 / 13.3 / 15.9 | 70400 |\n")
	j := b.resultsJSON(b.targets())
	var cl *JSONRun
	for i := range j.Runs {
		if j.Runs[i].Name == "cluster-2" {
			cl = &j.Runs[i]
		}
	}
	if cl == nil || cl.OrderMode != "async" || cl.LockMode != "lua" || cl.Figures["cpu_node1_order"] != 13.3 || cl.Figures["buckets"] != 2.0 {
		t.Errorf("results.json cluster-2: %+v", cl)
	}
	if len(j.ClusterNodes) != 3 || j.ClusterNodes[2] != (JSONNode{Addr: "127.0.0.1:7004", Role: "replica"}) {
		t.Errorf("results.json clusterNodes: %+v", j.ClusterNodes)
	}
	// The cluster picture is drawn from this results.json in package
	// pictures (TestClusterPictureFromBench): the file must match it.
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("..", "pictures", "testdata", "bench-cluster-block.json")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(data)+"\n" {
		t.Errorf("%s is not the harness's results.json: run this test with UPDATE_GOLDEN=1", golden)
	}
}

// mdHolds fails the test for each of wants RESULTS.md (md) lacks.
func mdHolds(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
}

// TestTwoPartners: an -x2 run is set beside its one-instance run, or,
// when that one was profiled, beside the mean of its unprofiled twins.
func TestTwoPartners(t *testing.T) {
	b := newBench(t.TempDir())
	b.put("sync-lua", "rps", "4000")
	if runs, ref := b.twoPartners("sync-lua"); len(runs) != 1 || runs[0] != "sync-lua" || ref != "4000" {
		t.Errorf("unprofiled: %v %q", runs, ref)
	}
	b.put("async-lua", "rps", "12000")
	b.put("async-lua", "profiled", "1")
	if runs, ref := b.twoPartners("async-lua"); len(runs) != 1 || ref != "12000" {
		t.Errorf("profiled without twins: %v %q", runs, ref)
	}
	b.put("async-lua-plain-a", "rps", "15000")
	b.put("async-lua-plain-b", "rps", "14000")
	runs, ref := b.twoPartners("async-lua")
	if len(runs) != 3 || runs[1] != "async-lua-plain-a" || runs[2] != "async-lua-plain-b" || ref != "14500.0" {
		t.Errorf("profiled with twins: %v %q, want the twins and 14500.0", runs, ref)
	}
}
