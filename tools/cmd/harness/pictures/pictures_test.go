package pictures

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"seckill/tools/cmd/harness/bench"
	"seckill/tools/cmd/harness/loadrun"
	"seckill/tools/cmd/harness/testbed"
)

// svgElem is one element of a rendered picture: its name, attributes and
// character data.
type svgElem struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG decodes a picture with encoding/xml (failing the test when it
// is not well-formed XML with an <svg> root in the SVG namespace) and
// returns its elements in document order.
func parseSVG(t *testing.T, b []byte) []svgElem {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var elems []svgElem
	var open []int // indexes of the open elements
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := svgElem{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(elems) == 0 && (tk.Name.Local != "svg" || tk.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element: got %s in %q, want svg in the SVG namespace", tk.Name.Local, tk.Name.Space)
			}
			elems = append(elems, e)
			open = append(open, len(elems)-1)
		case xml.CharData:
			if len(open) > 0 {
				elems[open[len(open)-1]].text += string(tk)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
	if len(elems) == 0 {
		t.Fatal("empty document")
	}
	if len(open) != 0 {
		t.Fatalf("%d elements left open", len(open))
	}
	return elems
}

// texts are the contents of the picture's <text> elements.
func texts(elems []svgElem) []string {
	var out []string
	for _, e := range elems {
		if e.name == "text" {
			out = append(out, e.text)
		}
	}
	return out
}

// hasText says whether the picture's text contains s (within one <text>
// element, or across the lines of a wrapped paragraph).
func hasText(elems []svgElem, s string) bool {
	return strings.Contains(strings.Join(texts(elems), " "), s)
}

// coloured says whether some <text> element reads exactly s in colour.
func coloured(elems []svgElem, s, colour string) bool {
	for _, e := range elems {
		if e.name == "text" && e.text == s && strings.Contains(e.attrs["style"], colour) {
			return true
		}
	}
	return false
}

// badges are the texts of the badges drawn on a background colour: a
// <rect> with that fill directly followed by its <text>.
func badges(elems []svgElem, fill string) []string {
	var out []string
	for i := 1; i < len(elems); i++ {
		if elems[i].name == "text" && elems[i-1].name == "rect" && elems[i-1].attrs["fill"] == fill && elems[i-1].attrs["rx"] == "4" {
			out = append(out, elems[i].text)
		}
	}
	return out
}

// fixtureRun is one cell of the matrix fixture.
func fixtureRun(mode string, instances int, setting string, lock, past, unique, orders int64) loadrun.MatrixRun {
	r := &loadrun.Result{Mode: mode, Instances: instances, Setting: setting, LockTTL: "10s", CriticalDelay: "0s",
		Users: 300, Dups: 4, InitialStock: 200, Orders: orders, LockRefused: lock, PastLock: past, UniqueKey: unique,
		Oversold: orders > 200, Consistent: orders <= 200, Breaches: unique}
	if setting == "slow" {
		r.LockTTL, r.CriticalDelay, r.SpacingMS, r.Users, r.InitialStock = "1s", "2500ms", 600, 150, 150
		r.Oversold, r.Consistent = orders > 150, orders <= 150
	}
	m := loadrun.MatrixRun{Mode: mode, Instances: instances, Setting: setting, Expected: loadrun.Expectation(mode, instances, setting), Result: r}
	loadrun.JudgeCell(&m)
	return m
}

func matrixFixture() loadrun.MatrixReport {
	return loadrun.MatrixReport{
		Generated: "2031-02-03 04:05 UTC", ElapsedS: 271,
		Machine: map[string]string{"uname": "Linux fixture", "cores": "2", "k6": "k6 v9.9.9"},
		Runs: []loadrun.MatrixRun{
			fixtureRun("none", 1, "normal", 0, 137, 463, 200),
			fixtureRun("lua", 2, "normal", 613, 47, 0, 200),
			fixtureRun("lua", 2, "slow", 301, 149, 0, 150),
			fixtureRun("reentrant", 1, "slow", 449, 0, 0, 153), // 3 units oversold: must show red
		},
	}
}

func TestMatrixPicture(t *testing.T) {
	data, err := json.Marshal(matrixFixture())
	if err != nil {
		t.Fatal(err)
	}
	svg, err := renderMatrixPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	for _, want := range []string{"137", "463", "613", "47", "301", "149", "449", // the counts of the fixture
		"2031-02-03 04:05 UTC", "make loadtest-matrix", "271 s", "k6 v9.9.9", // the run's date and command
		"Normal", "Slow business", "lease 1s", "2500ms", "none", "lua", "reentrant",
		"stopped by the lock", "only by the unique key", "units oversold", "answers"} {
		if !hasText(elems, want) {
			t.Errorf("no text %q in the picture; texts: %q", want, texts(elems))
		}
	}
	// Three runs sold nothing beyond their stock: three green zero badges
	// (and the legend's). The fourth sold 3 units too many: a red badge.
	if got := badges(elems, colGoodBg); len(got) != 4 || strings.Join(got, "") != "0000" {
		t.Errorf("green badges: got %q, want four zeros (three runs and the legend)", got)
	}
	if got := badges(elems, colBad); len(got) != 1 || got[0] != "3" {
		t.Errorf("red badges: got %q, want [3]", got)
	}
	// Unique-key rejections (the lock failed) are red. None is not.
	if !coloured(elems, "463", colBad) {
		t.Errorf("the unique-key count 463 is not in %s", colBad)
	}
	if coloured(elems, "0", colBad) {
		t.Errorf("a zero is in %s", colBad)
	}
	if again, _ := renderMatrixPicture(data); !bytes.Equal(again, svg) {
		t.Error("two renderings of the same results differ")
	}
}

func TestMatrixPictureRunFailed(t *testing.T) {
	rep := matrixFixture()
	rep.Runs = append(rep.Runs, loadrun.MatrixRun{Mode: "zookeeper", Instances: 2, Setting: "normal", Log: "/tmp/zk.log"})
	loadrun.JudgeCell(&rep.Runs[len(rep.Runs)-1])
	elems := parseSVG(t, matrixSVG(rep))
	if !hasText(elems, "run failed") || !hasText(elems, "zookeeper") {
		t.Errorf("a failed run is not shown; texts: %q", texts(elems))
	}
}

func benchFixture(violations []string) bench.JSON {
	run := func(name, kind string, figs map[string]any) bench.JSONRun {
		r := bench.JSONRun{Name: name, Kind: kind, OK: true, Figures: figs}
		if kind == "wrk" && strings.HasPrefix(name, "sync-") {
			r.OrderMode, r.LockMode, _ = strings.Cut(name, "-")
		}
		return r
	}
	m := func(v float64) *float64 { return &v }
	return bench.JSON{
		Schema: 1, Started: "2031-02-03 04:05:06 UTC", Finished: "2031-02-03 04:09:10 UTC",
		Machine:  map[string]string{"nproc": "2", "cpu": "Fixture CPU", "kernel": "Linux fixture", "loadBefore": "1.11 1.0 1.0", "loadAfter": "2.22 2 2"},
		Settings: map[string]any{"conns": 32.0, "duration": 10.0, "asyncLockModes": []any{"lua"}},
		Limits: []bench.JSONRun{
			run("noop", "limit", map[string]any{"rps": 41234.0}),
			run("admit", "limit", map[string]any{"rps": 67891.0}),
			run("admit-P12", "limit", map[string]any{"rps": 171717.0, "depth": 12.0}),
			run("slap", "limit", map[string]any{"rps": 4567.0}),
			run("insert", "limit", map[string]any{"rps": 22222.0}),
		},
		Runs: []bench.JSONRun{
			run("soldout", "wrk", map[string]any{"rps": 40321.0}),
			run("sync-lua", "wrk", map[string]any{"rps": 1987.0, "p99_us": 26360.0}),
			run("sync-zookeeper", "wrk", map[string]any{"rps": 975.0, "p99_us": 59500.0}),
			run("async-lua", "wrk", map[string]any{"rps": 15432.0, "drain_rate": 14321.0}),
			run("async-lua-nodrain", "wrk", map[string]any{"rps": 17654.0}),
			run("k6-async-lua-noop", "k6", map[string]any{"p99_us": 1860.0}),
			run("k6-async-lua", "k6", map[string]any{"p99_us": 4260.0}),
		},
		Targets: []bench.JSONTarget{
			{Name: bench.TargetSyncSlap, Measured: m(0.44), Op: ">=", Required: 0.6},
			{Name: bench.TargetSoldoutNoop, Measured: m(0.98), Op: ">=", Required: 0.9, Met: true},
			{Name: bench.TargetAsyncSync, Measured: m(7.77), Op: ">=", Required: 8},
			{Name: bench.TargetAsyncAdmit, Measured: m(0.09), Op: ">=", Required: 0.4},
			{Name: bench.TargetNoDrain, Measured: m(0.87), Op: ">=", Required: 0.8, Met: true},
			{Name: bench.TargetDrainInsert, Measured: m(0.64), Op: ">=", Required: 1},
			{Name: bench.TargetK6P99, Measured: m(2.29), Op: "<=", Required: 1.5},
		},
		Violations: violations,
	}
}

func TestBenchPicture(t *testing.T) {
	data, err := json.Marshal(benchFixture(nil))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := renderBenchPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	for _, want := range []string{"41,234 req/s", "40,321 req/s", "4,567 txn/s", "1,987 req/s", "15,432 req/s",
		"171,717 ops/s", "EVALSHA of seckill.lua, -P 12", "ratio 0.09, target ≥ 0.4: missed",
		"17,654 req/s", "ratio 0.87, target ≥ 0.8: met", "consumers held during the load",
		"22,222 rows/s", "14,321 orders/s", "1.86 ms", "4.26 ms", "975 req/s", "p99 59.5 ms",
		"ratio 0.44, target ≥ 0.6: missed", "ratio 0.98, target ≥ 0.9: met", "ratio 7.77, target ≥ 8: missed",
		"ratio 2.29, target ≤ 1.5: missed", "target ≤ 1.5 × 1.86 = 2.79 ms", "target ≥ 0.6 × 4,567 = 2,740 req/s",
		"zookeeper", "2031-02-03 04:05:06 UTC", "make bench", "Fixture CPU", "32 connections, 10 s per run"} {
		if !hasText(elems, want) {
			t.Errorf("no text %q in the picture; texts: %q", want, texts(elems))
		}
	}
	if got := badges(elems, colGoodBg); len(got) != 1 || got[0] != "0" {
		t.Errorf("violations badge: got %q, want a green 0", got)
	}

	data, _ = json.Marshal(benchFixture([]string{"sync-lua: invariant 1: 201 orders > 200"}))
	svg, err = renderBenchPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems = parseSVG(t, svg)
	if got := badges(elems, colBad); len(got) != 1 || got[0] != "1" {
		t.Errorf("violations badge: got %q, want a red 1", got)
	}
	if !hasText(elems, "201 orders > 200") {
		t.Error("the violation is not named")
	}
}

// TestBenchPictureOlderResults reads results.json of an older harness. It has
// the admission limit at depth 1 only, no -nodrain run, and older targets.
// The admission block then compares with depth 1. A block whose target the
// run did not have is left out. An older target is listed.
func TestBenchPictureOlderResults(t *testing.T) {
	b := benchFixture(nil)
	b.Limits = slices.DeleteFunc(b.Limits, func(r bench.JSONRun) bool { return r.Name == "admit-P12" })
	b.Targets = slices.DeleteFunc(b.Targets, func(tg bench.JSONTarget) bool { return tg.Name == bench.TargetNoDrain })
	data, _ := json.Marshal(b)
	svg, err := renderBenchPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	if !hasText(elems, "67,891 ops/s") || hasText(elems, "171,717 ops/s") {
		t.Errorf("the admission block: want the depth-1 limit; texts: %q", texts(elems))
	}
	if hasText(elems, "consumers held during the load") {
		t.Errorf("a block drawn for a target the run did not have; texts: %q", texts(elems))
	}
	b = benchFixture(nil)
	b.Targets[3].Name = "async req/s ÷ EVALSHA seckill.lua ops/s" // the name of then
	data, _ = json.Marshal(b)
	if svg, err = renderBenchPicture(data); err != nil {
		t.Fatal(err)
	}
	if elems = parseSVG(t, svg); !hasText(elems, "async req/s ÷ EVALSHA seckill.lua ops/s") {
		t.Errorf("the target of then is not listed; texts: %q", texts(elems))
	}
}

// TestBenchPictureOtherTargets: a target with no block of its own is
// listed, never dropped.
func TestBenchPictureOtherTargets(t *testing.T) {
	b := benchFixture(nil)
	v := 71.3
	b.Targets = append(b.Targets, bench.JSONTarget{Name: "server CPU us per fixture order", Measured: &v, Op: "<=", Required: 60})
	data, _ := json.Marshal(b)
	svg, err := renderBenchPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	if !hasText(elems, "server CPU us per fixture order") || !coloured(elems, "71.3, target ≤ 60: missed", colWarn) {
		t.Errorf("the extra target is not listed as missed; texts: %q", texts(elems))
	}
}

func TestBenchPictureDrainKeptUp(t *testing.T) {
	b := benchFixture(nil)
	b.Runs[3].Figures = map[string]any{"rps": 15432.0, "drain_rate": "", "orders": 90000.0}
	data, _ := json.Marshal(b)
	svg, err := renderBenchPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	if !hasText(elems, "9,000 orders/s") || !hasText(elems, "kept up") {
		t.Errorf("the drain of consumers that kept up: want orders ÷ duration; texts: %q", texts(elems))
	}
}

// clusterFixture is bench results with the Redis Cluster block: one Redis
// (async-lua) and two cluster runs on three masters and their replicas.
func clusterFixture() bench.JSON {
	b := benchFixture(nil)
	b.Runs[3].Figures = map[string]any{"rps": 24657.0, "cpu_server_order": 37.5, "cpu_redis_order": 16.8}
	node := func(run map[string]any, us ...float64) map[string]any {
		for i, v := range us {
			run[fmt.Sprintf("cpu_node%d_order", i)] = v
		}
		return run
	}
	b.Runs = append(b.Runs,
		bench.JSONRun{Name: "cluster-1", Kind: "wrk", OrderMode: "async", LockMode: "lua", OK: true,
			Figures: node(map[string]any{"buckets": 1.0, "rps": 19046.6, "cpu_server_order": 43.7, "cpu_redis_order": 41.3}, 2.2, 22.4, 2.3, 11.6, 1.4, 1.5)},
		bench.JSONRun{Name: "cluster-8", Kind: "wrk", OrderMode: "async", LockMode: "lua", OK: true,
			Figures: node(map[string]any{"buckets": 8.0, "rps": 14780.2, "cpu_server_order": 52.5, "cpu_redis_order": 56.7}, 13.7, 13.8, 10.2, 6.9, 5.1, 6.9)})
	b.ClusterNodes = []bench.JSONNode{{Addr: "127.0.0.1:7001", Role: "master"}, {Addr: "127.0.0.1:7002", Role: "master"}, {Addr: "127.0.0.1:7003", Role: "master"},
		{Addr: "127.0.0.1:7004", Role: "replica"}, {Addr: "127.0.0.1:7005", Role: "replica"}, {Addr: "127.0.0.1:7006", Role: "replica"}}
	b.Results = "tools/bench/RESULTS.md"
	return b
}

func TestClusterPicture(t *testing.T) {
	data, err := json.Marshal(clusterFixture())
	if err != nil {
		t.Fatal(err)
	}
	svg, err := RenderClusterPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	for _, want := range []string{"one Redis", "cluster, 1 bucket", "cluster, 8 buckets",
		"24,657 req/s", "19,047 req/s", "14,780 req/s", // measured
		"59,500 orders/s", "44,600 orders/s", "72,500 orders/s", // 1e6 ÷ 16.8, ÷ 22.4 (M2), ÷ 13.8 (M2)
		"37.5", "43.7", "52.5", "41.3", "56.7", "the one process: 16.8", "2.2", "2.3", "13.7", "10.2", "M1 µs", "M3 µs",
		"3 masters and 3 replicas", "2031-02-03 04:05:06 UTC, 2 cores", "Fixture CPU", "tools/bench/results.json", "tools/bench/RESULTS.md"} {
		if !hasText(elems, want) {
			t.Errorf("no text %q in the picture; texts: %q", want, texts(elems))
		}
	}
	var bold []string
	for _, e := range elems {
		if e.name == "text" && e.attrs["class"] == "num bold" {
			bold = append(bold, e.text)
		}
	}
	if strings.Join(bold, ",") != "22.4,13.8" {
		t.Errorf("busiest masters in bold: got %q, want 22.4 and 13.8", bold)
	}
	if hasText(elems, "11.6") {
		t.Error("a replica's figure is drawn as a master's")
	}
	if again, _ := RenderClusterPicture(data); !bytes.Equal(again, svg) {
		t.Error("two renderings of the same results differ")
	}
}

// TestClusterPictureNothingToDraw: bench results without the cluster block
// are skipped (errNoPictureData). Broken results are an error.
func TestClusterPictureNothingToDraw(t *testing.T) {
	data, _ := json.Marshal(benchFixture(nil))
	if _, err := RenderClusterPicture(data); !errors.Is(err, errNoPictureData) {
		t.Errorf("results without cluster runs: got %v, want errNoPictureData", err)
	}
	for _, data := range []string{"", "{", "{}", `{"runs":[]}`, `{"runs":{}}`} {
		_, err := RenderClusterPicture([]byte(data))
		if err == nil || errors.Is(err, errNoPictureData) {
			t.Errorf("from %q: got %v, want an error other than errNoPictureData", data, err)
		}
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "tools/bench"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "tools/bench/results.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := picture{Results: "tools/bench/results.json", SVG: "docs/bench-cluster.svg", Render: RenderClusterPicture}
	if _, ok, err := p.render(root); ok || err != nil {
		t.Errorf("render: got ok %v, err %v; want skipped", ok, err)
	}
	if why, err := p.stale(root); why != "" || err != nil {
		t.Errorf("stale: got %q, %v; want up to date (no picture, nothing to draw)", why, err)
	}
}

func TestFaultsPicture(t *testing.T) {
	data, err := os.ReadFile("testdata/faults.json")
	if err != nil {
		t.Fatal(err)
	}
	svg, err := renderFaultsPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	elems := parseSVG(t, svg)
	for _, want := range []string{"311", "1486", "1271", "207", "17", // the fixture's counts
		"app-kill-sync", "redis-async", "fence-off", "sentinel-async", "lua, async",
		"instance 2 of 2 killed (SIGKILL)", "port 27311 in use", "pass", "FAIL", "shown", "ERROR",
		"2031-02-03 04:05 UTC", "make faults CASE=fixture", "fixture machine", "FAULTS_USERS=600"} {
		if !hasText(elems, want) {
			t.Errorf("no text %q in the picture; texts: %q", want, texts(elems))
		}
	}
	// Two cases sold nothing too many and lost nothing: four green zeros.
	// redis-async oversold 5 units and lost 2 answers: red.
	if got := badges(elems, colGoodBg); strings.Join(got, ",") != "0,0,0,0" {
		t.Errorf("green badges: got %q, want four zeros", got)
	}
	if got := badges(elems, colBad); strings.Join(got, ",") != "5,2" {
		t.Errorf("red badges: got %q, want 5 (oversold) and 2 (lost)", got)
	}
	for _, s := range []string{"17", "FAIL", "ERROR", "no"} { // the 500s, the failed cases, the inconsistency
		if !coloured(elems, s, colBad) {
			t.Errorf("%q is not in %s", s, colBad)
		}
	}
	if !coloured(elems, "pass", colGood) || !coloured(elems, "yes", colGood) {
		t.Errorf("pass and yes are not in %s", colGood)
	}
}

func TestPictureRenderersRefuseBadResults(t *testing.T) {
	for _, p := range pictures {
		for _, data := range []string{"{", "{}", `{"runs":[],"cases":[],"limits":[]}`} {
			if _, err := p.Render([]byte(data)); err == nil {
				t.Errorf("%s from %q: no error", p.SVG, data)
			}
		}
	}
}

// TestPicturesUpToDate renders every picture from the results files of
// the repository and compares it with the picture beside them: a results
// file changed without `make pictures` fails here.
func TestPicturesUpToDate(t *testing.T) {
	root, err := testbed.ProjectRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pictures {
		why, err := p.stale(root)
		if err != nil {
			t.Errorf("%s: %v", p.SVG, err)
			continue
		}
		if why != "" {
			t.Errorf("%s: run make pictures", why)
		}
	}
}

func TestPictureStale(t *testing.T) {
	root := t.TempDir()
	p := picture{Results: "r/results.json", SVG: "docs/p.svg", Render: func(b []byte) ([]byte, error) { return append([]byte("svg:"), b...), nil }}
	write := func(rel, s string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		got, err := p.stale(root)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, want) || (want == "") != (got == "") {
			t.Errorf("stale: got %q, want %q", got, want)
		}
	}
	check("") // neither exists
	write("r/results.json", "1")
	check("is missing")
	write("docs/p.svg", "svg:1")
	check("")
	write("r/results.json", "2")
	check("out of date")
	os.Remove(filepath.Join(root, "r/results.json"))
	check("exists but")
}

func TestSVGHelpers(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {50460.3, "50,460"}, {-1234567, "-1,234,567"}}
	for _, tt := range tests {
		if got := fmtThousands(tt.v); got != tt.want {
			t.Errorf("fmtThousands(%v): got %q, want %q", tt.v, got, tt.want)
		}
	}
	ceil := []struct{ v, want float64 }{{0, 1}, {1, 1}, {704, 800}, {450, 600}, {4840, 6000}, {15204, 20000}, {3.5, 4}}
	for _, tt := range ceil {
		if got := niceCeil(tt.v); got != tt.want {
			t.Errorf("niceCeil(%v): got %v, want %v", tt.v, got, tt.want)
		}
	}
	if got := svgEsc(`a<b & "c"`); got != "a&lt;b &amp; &#34;c&#34;" {
		t.Errorf("svgEsc: got %q", got)
	}
	if got := svgClip("short", 100, 12); got != "short" {
		t.Errorf("svgClip kept: got %q", got)
	}
	long := "Redis killed (SIGKILL) mid-load, restarted empty after 10% more of the load"
	if got := svgClip(long, 120, 12); !strings.HasSuffix(got, "…") || svgTextWidth(got, 12) > 120 || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("svgClip: got %q", got)
	}
	lines := svgWrap(long, 150, 12)
	if len(lines) < 2 || strings.Join(lines, " ") != long {
		t.Errorf("svgWrap: got %q", lines)
	}
	for _, l := range lines {
		if svgTextWidth(l, 12) > 150 {
			t.Errorf("svgWrap: line %q wider than 150", l)
		}
	}
}

// The async panel: rows named by their Redis, the duplicates refused by
// the admission script in their own colour, counted in the "script" column.
func TestMatrixPictureAsync(t *testing.T) {
	rep := matrixFixture()
	for _, v := range []struct {
		redis   string
		buckets int
		script  int64
	}{{"single", 1, 587}, {"cluster", 8, 611}} {
		r := &loadrun.Result{Mode: "lua", Instances: 2, Setting: "async", OrderMode: "async", Redis: v.redis, Buckets: v.buckets,
			LockTTL: "10s", CriticalDelay: "0s", Users: 300, Dups: 4, InitialStock: 200, Orders: 200,
			ScriptRefused: v.script, Consistent: true}
		m := loadrun.MatrixRun{Mode: "lua", Instances: 2, Setting: "async", Redis: v.redis, Buckets: v.buckets, Expected: "holds", Result: r}
		loadrun.JudgeCell(&m)
		rep.Runs = append(rep.Runs, m)
	}
	elems := parseSVG(t, matrixSVG(rep))
	for _, want := range []string{"Async", "one Redis", "cluster, 8", "script", "587", "611", "by the async admission script", "Redis Cluster"} {
		if !hasText(elems, want) {
			t.Errorf("no text %q in the picture; texts: %q", want, texts(elems))
		}
	}
	bars := 0
	for _, e := range elems {
		if e.name == "rect" && e.attrs["fill"] == colScript {
			bars++
		}
	}
	if bars != 3 { // the legend's swatch and two bars
		t.Errorf("%d rects in %s, want 3 (legend and two bars)", bars, colScript)
	}
}

// TestClusterPictureFromBench draws the results.json that package bench
// writes for a cluster block (TestBenchClusterBlock keeps it current).
func TestClusterPictureFromBench(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bench-cluster-block.json"))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := RenderClusterPicture(data)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "70,400 orders/s") || !strings.Contains(string(svg), "59,500 orders/s") {
		t.Error("docs/bench-cluster.svg from the harness's results.json lacks the projections")
	}
}
