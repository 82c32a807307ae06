package pictures

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"seckill/tools/cmd/harness/bench"
	"seckill/tools/cmd/harness/testbed"
)

// docs/bench.svg: the benchmark (tools/bench/results.json) against the limits
// measured in the same run. Each comparison is a pair of bars, the limit
// (grey) and the service (blue), with the target drawn as a dashed line and
// its verdict. Then the sync seckill of every lock mode against the order
// transaction's own rate. Then the invariant violations of all runs.

// Layout of the bench picture (pixels).
const (
	bnWidth  = 900.0
	bnLeft   = 16.0
	bnBarX   = 300.0
	bnBarW   = 420.0
	bnValueX = 728.0
	bnBarH   = 13.0
	bnRowH   = 18.0
)

// benchFigure names one figure of results.json: a run (or limit) and a
// key of its figures, divided by scale (µs to ms: 1000).
type benchFigure struct {
	run, key string
	scale    float64
}

// benchComparison is one block of the picture.
type benchComparison struct {
	title          string
	target         string // the target's name in results.json
	absolute       bool   // the target is a value (ms), not a ratio to the limit
	limit          benchFigure
	limitLabel     string
	limitUnit      string
	measured       benchFigure
	measuredLabel  string
	measuredUnit   string
	keptUpFallback bool // measured is the drain rate: orders ÷ duration when the consumers kept up
}

// benchComparisons are the bench targets, as package bench computes them.
// Async runs are named after the first async
// lock mode, admit is the admission limit of "async ÷ EVALSHA" and
// admitLabel its label (benchData.admitLimit).
func benchComparisons(async, admit, admitLabel string) []benchComparison {
	return []benchComparison{
		{title: "Sold-out path against a no-op endpoint behind the same authentication", target: bench.TargetSoldoutNoop,
			limit: benchFigure{"noop", "rps", 1}, limitLabel: "no-op endpoint", limitUnit: "req/s",
			measured: benchFigure{"soldout", "rps", 1}, measuredLabel: "sold-out path (every answer 409)", measuredUnit: "req/s"},
		{title: "Sync seckill (lua lock) against the order transaction alone", target: bench.TargetSyncSlap,
			limit: benchFigure{"slap", "rps", 1}, limitLabel: "mariadb-slap of the transaction", limitUnit: "txn/s",
			measured: benchFigure{"sync-lua", "rps", 1}, measuredLabel: "sync seckill, every request an order", measuredUnit: "req/s"},
		{title: "Async seckill against sync seckill", target: bench.TargetAsyncSync,
			limit: benchFigure{"sync-lua", "rps", 1}, limitLabel: "sync seckill, lua lock", limitUnit: "req/s",
			measured: benchFigure{"async-" + async, "rps", 1}, measuredLabel: "async seckill, " + async + " lock", measuredUnit: "req/s"},
		{title: "Async seckill against its admission script alone, pipelined as the server pipelines it", target: bench.TargetAsyncAdmit,
			limit: benchFigure{admit, "rps", 1}, limitLabel: admitLabel, limitUnit: "ops/s",
			measured: benchFigure{"async-" + async, "rps", 1}, measuredLabel: "async seckill, " + async + " lock", measuredUnit: "req/s"},
		{title: "Async admission with the consumers writing against without them", target: bench.TargetNoDrain,
			limit: benchFigure{"async-" + async + "-nodrain", "rps", 1}, limitLabel: "consumers held during the load", limitUnit: "req/s",
			measured: benchFigure{"async-" + async, "rps", 1}, measuredLabel: "consumers writing (async seckill)", measuredUnit: "req/s"},
		{title: "Async drain (one consumer, after the load) against single-row INSERTs", target: bench.TargetDrainInsert,
			limit: benchFigure{"insert", "rps", 1}, limitLabel: "mariadb-slap single-row INSERT", limitUnit: "rows/s",
			measured: benchFigure{"async-" + async, "drain_rate", 1}, measuredLabel: "drain of the backlog", measuredUnit: "orders/s",
			keptUpFallback: true},
		{title: "Async latency against the no-op endpoint at a quarter of the async rate (k6, constant arrival), p99", target: bench.TargetK6P99,
			limit: benchFigure{"k6-async-" + async + "-noop", "p99_us", 1000}, limitLabel: "no-op endpoint at the same rate", limitUnit: "ms",
			measured: benchFigure{"k6-async-" + async, "p99_us", 1000}, measuredLabel: "async seckill", measuredUnit: "ms"},
	}
}

// benchData answers figure lookups over a results.json.
type benchData struct {
	bench.JSON
}

// run is the limit or run of that name (nil when absent).
func (b benchData) run(name string) *bench.JSONRun {
	for _, list := range [][]bench.JSONRun{b.Limits, b.Runs} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// fig is a figure as a number.
func (b benchData) fig(g benchFigure) (float64, bool) {
	r := b.run(g.run)
	if r == nil {
		return 0, false
	}
	v, ok := r.Figures[g.key].(float64)
	if !ok || math.IsNaN(v) {
		return 0, false
	}
	return v / g.scale, true
}

func (b benchData) target(name string) *bench.JSONTarget {
	for i := range b.Targets {
		if b.Targets[i].Name == name {
			return &b.Targets[i]
		}
	}
	return nil
}

// asyncMode is the lock mode of the async runs (the first of the settings).
func (b benchData) asyncMode() string {
	if l, ok := b.Settings["asyncLockModes"].([]any); ok && len(l) > 0 {
		if s, ok := l[0].(string); ok {
			return s
		}
	}
	return "lua"
}

// admitLimit is the admission limit that "async ÷ EVALSHA" divides by and
// its label: admit-P<d> (redis-benchmark at the server's pipelining depth)
// when the run has it, else admit (depth 1: results.json of older runs).
func (b benchData) admitLimit() (name, label string) {
	for _, l := range b.Limits {
		if strings.HasPrefix(l.Name, "admit-P") {
			return l.Name, "EVALSHA of seckill.lua, -P " + strings.TrimPrefix(l.Name, "admit-P")
		}
	}
	return "admit", "EVALSHA of seckill.lua"
}

// setting is a setting as text ("?" when absent).
func (b benchData) setting(key string) string {
	switch v := b.Settings[key].(type) {
	case float64:
		return fmt.Sprint(v)
	case string:
		return v
	}
	return "?"
}

// renderBenchPicture is docs/bench.svg from tools/bench/results.json.
func renderBenchPicture(data []byte) ([]byte, error) {
	var b benchData
	if err := json.Unmarshal(data, &b.JSON); err != nil {
		return nil, fmt.Errorf("tools/bench/results.json: %w", err)
	}
	if len(b.Runs) == 0 && len(b.Limits) == 0 {
		return nil, fmt.Errorf("tools/bench/results.json: no runs")
	}
	return benchSVG(b), nil
}

// fmtValue formats a figure for its unit: milliseconds with two decimals,
// rates as whole numbers with separators.
func fmtValue(v float64, unit string) string {
	if unit == "ms" {
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmtThousands(v) + " " + unit
}

// opText is a target's operator as a reader writes it.
func opText(op string) string {
	switch op {
	case ">=":
		return "≥"
	case "<=":
		return "≤"
	}
	return op
}

func benchSVG(b benchData) []byte {
	d := newSVG(bnWidth, "Benchmark: the service against the limits of the machine it ran on")
	y := 30.0
	y = d.heading(bnLeft, y, bnWidth-2*bnLeft, "Benchmark: the service against the machine's own limits",
		"Each target compares a rate of the service with a limit measured in the same run on the same machine "+
			"(the database, Redis or the HTTP stack doing only its part); the dashed line is the target.")
	x := d.legend(bnLeft, y, colLimit, "limit measured in the same run")
	x = d.legend(x, y, colMeasured, "the service")
	d.line(x, y-11, x, y+3, colInk, `stroke-width="1.5"`, `stroke-dasharray="4 3"`)
	d.text(x+8, y, "", "", "", "target")
	y += 10

	drawn := map[string]bool{bench.TargetViolations: true}
	admit, admitLabel := b.admitLimit()
	for _, c := range benchComparisons(b.asyncMode(), admit, admitLabel) {
		if b.target(c.target) == nil {
			continue // not a target of this run (results.json of an older harness)
		}
		y = benchBlock(d, b, c, y+26)
		drawn[c.target] = true
	}
	y = benchOtherTargets(d, b, drawn, y)
	y = benchModes(d, b, y+30)
	y = benchViolations(d, b, y+28)

	mc := b.Machine
	source := fmt.Sprintf("Source: tools/bench/results.json of `make bench` (go -C tools run ./cmd/harness bench), %s to %s; %s, %s cores (%s), %s; MariaDB %s, Redis %s, wrk %s, k6 %s; "+
		"%s connections, %s s per run; load average %s before, %s after. Server, load tools, MariaDB and Redis share the cores.",
		b.Started, strings.TrimPrefix(b.Finished, firstWord(b.Started)+" "), testbed.Or(mc["kernel"], "?"), testbed.Or(mc["nproc"], "?"), testbed.Or(mc["cpu"], "unknown CPU"), testbed.Or(mc["memory"], "?"),
		testbed.Or(mc["mariadb"], "?"), testbed.Or(mc["redis"], "?"), testbed.Or(mc["wrk"], "?"), testbed.Or(mc["k6"], "?"),
		b.setting("conns"), b.setting("duration"), testbed.Or(firstWord(mc["loadBefore"]), "?"), testbed.Or(firstWord(mc["loadAfter"]), "?"))
	lines := svgWrap(source, bnWidth-2*bnLeft, 11)
	if len(b.Disturbed) > 0 {
		lines = append(lines, svgWrap("Disturbed by other work on the machine: "+strings.Join(b.Disturbed, "; "), bnWidth-2*bnLeft, 11)...)
	}
	lines = append(lines, svgWrap("Every figure and command, the profiles of missed targets and what bounds them: tools/bench/RESULTS.md, tools/bench/NOTES.md. "+
		"Drawn by `make pictures` (go -C tools run ./cmd/harness pictures); never edited by hand.", bnWidth-2*bnLeft, 11)...)
	y = d.caption(bnLeft, y+24, lines...)
	return d.finish(y + 4)
}

// firstWord is s up to its first space.
func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// benchBlock draws one comparison from y and returns the y after it.
func benchBlock(d *svgDoc, b benchData, c benchComparison, y float64) float64 {
	limit, okL := b.fig(c.limit)
	measured, okM := b.fig(c.measured)
	measuredLabel := c.measuredLabel
	if !okM && c.keptUpFallback {
		// The consumers kept up with the load (no backlog to drain): their
		// rate during the load stands for the drain rate, as in RESULTS.md.
		orders, okO := b.fig(benchFigure{c.measured.run, "orders", 1})
		var dur float64
		fmt.Sscan(b.setting("duration"), &dur)
		if okO && dur > 0 {
			measured, okM = orders/dur, true
			measuredLabel = "kept up: rate during the load"
		}
	}
	t := b.target(c.target)
	d.text(bnLeft, y, "bold", "", "", c.title)
	if t != nil {
		verdict, colour := "missed", colWarn
		if t.Met {
			verdict, colour = "met", colGood
		}
		got := "not measured"
		if t.Measured != nil {
			got = fmt.Sprintf("%.2f", *t.Measured)
		}
		what := "ratio " + got
		req := fmt.Sprintf("%g", t.Required)
		if c.absolute {
			what, req = "p99 "+got+" ms", req+" ms"
		}
		if t.Measured == nil {
			verdict, colour = "not measured", colBad
		}
		d.text(bnWidth-bnLeft, y, "bold", "end", colour, fmt.Sprintf("%s, target %s %s: %s", what, opText(t.Op), req, verdict))
	}
	end := max(limit, measured)
	tick := 0.0
	if t != nil {
		tick = t.Required
		if !c.absolute {
			tick = t.Required * limit
		}
		end = max(end, tick)
	}
	end = niceCeil(end * 1.02)
	rows := []struct {
		label, unit string
		v           float64
		ok          bool
		colour      string
	}{{c.limitLabel, c.limitUnit, limit, okL, colLimit}, {measuredLabel, c.measuredUnit, measured, okM, colMeasured}}
	top := y + 6
	for i, r := range rows {
		ry := top + float64(i)*bnRowH
		d.text(bnLeft+12, ry+12, "", "", "", svgClip(r.label, bnBarX-bnLeft-24, 12))
		if !r.ok {
			d.text(bnBarX, ry+12, "small", "", colBad, "not measured")
			continue
		}
		d.rect(bnBarX, ry+(bnRowH-bnBarH)/2, bnBarW*r.v/end, bnBarH, r.colour)
		d.text(bnValueX, ry+12, "num", "", "", fmtValue(r.v, r.unit))
	}
	bottom := top + 2*bnRowH
	if t != nil && tick > 0 {
		tx := bnBarX + bnBarW*tick/end
		d.line(tx, top-1, tx, bottom+1, colInk, `stroke-width="1.5"`, `stroke-dasharray="4 3"`)
		label := fmt.Sprintf("target %s %s", opText(t.Op), fmtValue(tick, c.measuredUnit))
		if !c.absolute {
			label = fmt.Sprintf("target %s %g × %s = %s", opText(t.Op), t.Required, fmtLimit(limit), fmtValue(tick, c.measuredUnit))
		}
		anchor := "middle"
		if tx+svgTextWidth(label, 11)/2 > bnValueX-4 {
			anchor = "end"
		}
		d.text(tx, bottom+12, "small", anchor, "", label)
		bottom += 12
	}
	return bottom
}

// benchModes draws the sync seckill of every lock mode against the order
// transaction's rate and returns the y after it.
func benchModes(d *svgDoc, b benchData, y float64) float64 {
	var runs []bench.JSONRun
	for _, r := range b.Runs {
		if r.Kind == "wrk" && r.OrderMode == "sync" && strings.HasPrefix(r.Name, "sync-") {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return y
	}
	d.text(bnLeft, y, "head", "", "", "Sync seckill in every lock mode, every request an order")
	y += 6
	slap, okSlap := b.fig(benchFigure{"slap", "rps", 1})
	t := b.target(bench.TargetSyncSlap)
	end := slap
	for _, r := range runs {
		if v, ok := r.Figures["rps"].(float64); ok {
			end = max(end, v)
		}
	}
	end = niceCeil(end * 1.02)
	top := y + 10
	bottom := top + float64(len(runs))*bnRowH
	for i := range runs {
		d.stripe(i, bnLeft, bnWidth, top+float64(i)*bnRowH, bnRowH)
	}
	d.axis(bnBarX, bnBarW, top, bottom+2, end, "req/s")
	for i, r := range runs {
		ry := top + float64(i)*bnRowH
		d.text(bnLeft+12, ry+13, "", "", "", r.LockMode)
		v, ok := r.Figures["rps"].(float64)
		if !ok {
			d.text(bnBarX, ry+13, "small", "", colBad, "not measured")
			continue
		}
		colour := colMeasured
		if !r.OK {
			colour = colBad
		}
		d.rect(bnBarX, ry+(bnRowH-bnBarH)/2, bnBarW*v/end, bnBarH, colour)
		text := fmtValue(v, "req/s")
		if p99, ok := r.Figures["p99_us"].(float64); ok {
			text += fmt.Sprintf(", p99 %.1f ms", p99/1000)
		}
		d.text(bnValueX, ry+13, "num", "", "", text)
	}
	y = bottom + 30
	if okSlap {
		sx := bnBarX + bnBarW*slap/end
		d.line(sx, top-2, sx, bottom+2, colInk, `stroke-width="1.5"`)
		if t != nil && t.Required > 0 {
			tx := bnBarX + bnBarW*t.Required*slap/end
			d.line(tx, top-2, tx, bottom+2, colInk, `stroke-width="1.5"`, `stroke-dasharray="4 3"`)
			d.text(bnLeft, y, "small", "", "", fmt.Sprintf("Solid line: the order transaction alone (%s); dashed: the target, %g × that = %s.",
				fmtValue(slap, "txn/s"), t.Required, fmtValue(t.Required*slap, "req/s")))
			y += 4
		}
	}
	return y
}

// benchViolations draws the invariant check of all runs and returns the y
// after it.
func benchViolations(d *svgDoc, b benchData, y float64) float64 {
	n := len(b.Violations)
	d.text(bnLeft+42, y, "bold", "", "", "invariant violations in all runs (the audit and the database after each run)")
	if n == 0 {
		d.badge(bnLeft+17, y, 26, colGoodBg, colGood, "0")
	} else {
		d.badge(bnLeft+17, y, 34, colBad, "#ffffff", fmt.Sprint(n))
		for i, v := range b.Violations {
			if i == 3 {
				d.text(bnLeft+12, y+float64(i+1)*15, "small", "", colBad, fmt.Sprintf("and %d more: tools/bench/RESULTS.md", n-3))
				y += 15
				break
			}
			d.text(bnLeft+12, y+float64(i+1)*15, "small", "", colBad, svgClip(v, bnWidth-2*bnLeft-12, 11))
		}
		y += 15 * float64(min(n, 3))
	}
	return y
}

// benchOtherTargets lists the targets no comparison draws (a target added
// to package bench shows here until it gets a block of its own) and
// returns the y after them.
func benchOtherTargets(d *svgDoc, b benchData, drawn map[string]bool, y float64) float64 {
	var rest []bench.JSONTarget
	for _, t := range b.Targets {
		if !drawn[t.Name] {
			rest = append(rest, t)
		}
	}
	if len(rest) == 0 {
		return y
	}
	y += 30
	d.text(bnLeft, y, "bold", "", "", "Other targets")
	for _, t := range rest {
		y += 18
		got, verdict, colour := "not measured", "not measured", colBad
		if t.Measured != nil {
			got = fmt.Sprintf("%g", *t.Measured)
			verdict, colour = "missed", colWarn
			if t.Met {
				verdict, colour = "met", colGood
			}
		}
		d.text(bnLeft+12, y, "", "", "", svgClip(t.Name, bnValueX-bnLeft-40, 12))
		d.text(bnWidth-bnLeft, y, "bold", "end", colour, fmt.Sprintf("%s, target %s %g: %s", got, opText(t.Op), t.Required, verdict))
	}
	return y
}

// fmtLimit is a limit in a target's label: thousands separated, or two
// decimals below 100 (a p99 in ms).
func fmtLimit(v float64) string {
	if math.Abs(v) < 100 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return fmtThousands(v)
}
