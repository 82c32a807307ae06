package bench

import (
	"slices"
	"strings"
	"testing"
)

// The tracing cost is each pair's traced ÷ plain req/s and their median;
// 100 % is against the plain runs' median. The row says it, with the
// verdict against the goal, and the runs are not the per-command cost
// runs.
func TestBenchTracingCost(t *testing.T) {
	b := fixedBench()
	for run, rps := range map[string]string{"async-lua-plain-a": "10000", "async-lua-traced-a": "9600",
		"async-lua-traced-b": "8800", "async-lua-plain-b": "10000", "async-lua-traced100": "5000"} {
		b.runs[run] = benchFigures{"rps": rps}
	}
	pairs, median, full := reporter{b}.tracingCost("async-lua")
	if !slices.Equal(pairs, []string{"0.96", "0.88"}) || median != "0.92" || full != "0.50" {
		t.Fatalf("pairs %v, median %s, 100 %% %s; want [0.96 0.88], 0.92, 0.50", pairs, median, full)
	}
	row := reporter{b}.tracingTarget("async-lua")
	want := "(async-lua: 9600 ÷ 10000 = 0.96, 8800 ÷ 10000 = 0.88; at 100 %: 0.50) | 0.92 | ≥ 0.95 | **no** |\n"
	if !strings.HasSuffix(row, want) {
		t.Fatalf("row %q, want it to end with %q", row, want)
	}
	md := b.render(b.targets(), func(string) string { return "" })
	if !strings.Contains(md, row) {
		t.Fatalf("RESULTS.md has no tracing row %q", row)
	}
	b.runs["async-lua-traced-b"]["rps"] = "9800"
	if _, median, _ = (reporter{b}).tracingCost("async-lua"); median != "0.97" {
		t.Fatalf("median %s, want 0.97", median)
	}
	// One pair lost: the other stands alone.
	delete(b.runs, "async-lua-plain-b")
	if pairs, median, _ = (reporter{b}).tracingCost("async-lua"); pairs[1] != "-" || median != "0.96" {
		t.Fatalf("one pair: %v, median %s; want the first alone", pairs, median)
	}
	for _, run := range []string{"async-lua-plain-a", "async-lua-traced-b", "async-lua-traced100"} {
		if !tracingRun(run) {
			t.Errorf("%s is not a tracing run", run)
		}
	}
	if tracingRun("async-lua") || tracingRun("async-lua-nodrain") {
		t.Error("a main run counted as a tracing run")
	}
	// Without the runs, no row.
	if row := (reporter{fixedBench()}).tracingTarget("async-lua"); row != "" {
		t.Fatalf("no tracing runs: row %q", row)
	}
}

// The traced runs export over OTLP, never to the console, at 1 % and 100 %.
func TestBenchTracedEnv(t *testing.T) {
	for _, p := range tracedPairs {
		env := strings.Join(p.env, " ")
		switch {
		case strings.HasPrefix(p.suffix, "-plain"):
			if env != "" {
				t.Errorf("%s: %s, want untraced", p.suffix, env)
			}
		case strings.Contains(env, "console") || !strings.Contains(env, "OTEL_TRACES_EXPORTER=otlp"):
			t.Errorf("%s: %s, want the OTLP exporter", p.suffix, env)
		}
	}
	if got := strings.Join(tracedAt("0.01"), " "); !strings.HasSuffix(got, "OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01") {
		t.Errorf("tracedAt: %s", got)
	}
}
