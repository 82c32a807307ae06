package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The cost of tracing: the async admission with tracing at a 1 % sample
// against the same admission untraced, in alternated pairs (plain, traced,
// traced, plain: a drift of the machine during the four runs weighs on both
// sides alike), then once at 100 %. The exporter is OTLP to a port where
// nothing listens: what an operator runs, minus the collector. The console
// exporter would print every sampled span to the server's log, a cost no
// operator pays.

// tracingOTLP is the exporter of the traced runs: OTLP to 127.0.0.1:9 (the
// discard port, closed here). Its failed exports are logged and dropped.
var tracingOTLP = []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9"}

// tracedAt is tracing at a sample of ratio.
func tracedAt(ratio string) []string {
	return append(slices.Clone(tracingOTLP), "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG="+ratio)
}

// tracedPairs are the runs of the tracing cost after name (the first async
// run), in the order they run: each with its suffix and the server's
// tracing variables (none: plain).
var tracedPairs = []struct {
	suffix string
	env    []string
}{
	{"-plain-a", nil}, {"-traced-a", tracedAt("0.01")},
	{"-traced-b", tracedAt("0.01")}, {"-plain-b", nil},
	{"-traced100", tracedAt("1")},
}

// tracingGoal is the least traced-at-1 % ÷ plain req/s, median of the pairs.
const tracingGoal = 0.95

// tracingRun tells a run of the tracing cost: not one of the main table's
// per-command cost runs.
func tracingRun(name string) bool {
	for _, p := range tracedPairs {
		if strings.HasSuffix(name, p.suffix) {
			return true
		}
	}
	return false
}

// tracedRuns runs the tracing cost of the async run name in lockMode.
func (b seckillRuns) tracedRuns(name, lockMode string) {
	for _, v := range tracedPairs {
		run := name + v.suffix
		if len(v.env) > 0 {
			b.noteCmd(fmt.Sprintf("# %s: the server started with %s", run, strings.Join(v.env, " ")))
		}
		b.attempt(run, func() { b.asyncRun(run, lockMode, false, v.env...) })
		b.rows = append(b.rows, run)
	}
}

// tracingCost is the tracing cost of the async run ar: each pair's traced ÷
// plain req/s, their median, and 100 % ÷ the plain runs' median ("-" for a
// figure not measured).
func (b reporter) tracingCost(ar string) (pairs []string, median, full string) {
	rps := func(s string) string { return b.get(ar+s, "rps") }
	var ratios, plains []float64
	for _, p := range []string{"a", "b"} {
		r := benchRatio(rps("-traced-"+p), rps("-plain-"+p))
		pairs = append(pairs, r)
		if r != "-" {
			ratios = append(ratios, figNum0(r))
			plains = append(plains, figNum0(rps("-plain-"+p)))
		}
	}
	if len(ratios) == 0 {
		return pairs, "-", "-"
	}
	med := func(xs []float64) float64 {
		slices.Sort(xs)
		if n := len(xs); n%2 == 1 {
			return xs[n/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	median = fmt.Sprintf("%.2f", med(ratios))
	full = benchRatio(rps("-traced100"), strconv.FormatFloat(med(plains), 'f', 2, 64))
	return pairs, median, full
}

// tracingTarget is the target row of the tracing cost ("" without async runs).
func (b reporter) tracingTarget(ar string) string {
	if b.get(ar+"-plain-a", "rps") == "" && b.get(ar+"-traced-a", "rps") == "" {
		return ""
	}
	pairs, median, full := b.tracingCost(ar)
	return fmt.Sprintf("| 36 | async req/s traced at 1 %% (OTLP, nothing listening) ÷ untraced, median of alternated pairs (%s: %s ÷ %s = %s, %s ÷ %s = %s; at 100 %%: %s) | %s | ≥ %g | %s |\n",
		ar, fmtRate(b.get(ar+"-traced-a", "rps")), fmtRate(b.get(ar+"-plain-a", "rps")), pairs[0],
		fmtRate(b.get(ar+"-traced-b", "rps")), fmtRate(b.get(ar+"-plain-b", "rps")), pairs[1], full,
		median, tracingGoal, benchVerdict(atLeast(median, tracingGoal)))
}
