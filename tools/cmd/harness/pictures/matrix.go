package pictures

import (
	"fmt"
	"strings"

	"seckill/tools/cmd/harness/loadrun"
	"seckill/tools/cmd/harness/testbed"
)

// docs/lock-matrix.svg draws the load-test matrix (tools/loadtest/results.json). It
// has one panel per setting (normal, slow business). Each row is a lock mode
// and instance count. A bar splits its DUPLICATE_ORDER answers by where they
// were stopped. That is by the lock, past it by the order transaction's
// check, or only by the unique key. The row shows the three counts, the units
// oversold (a green 0, or red) and the verdict. The async panel has one row
// per Redis and instance count. Its Redis is one Redis, or the cluster with
// the voucher in N buckets. Its duplicates are refused by the admission
// script.

// Layout of the matrix picture (pixels).
const (
	mxWidth   = 900.0
	mxLeft    = 16.0  // mode names
	mxInstX   = 118.0 // instance counts
	mxBarX    = 150.0
	mxBarW    = 340.0
	mxLockX   = 532.0 // right edges of the three counts
	mxPastX   = 574.0
	mxUniqX   = 622.0
	mxOverX   = 668.0 // centre of the oversold badge
	mxVerdX   = 706.0
	mxRowH    = 18.0
	mxBarH    = 12.0
	mxFontPx  = 12.0
	mxCaption = mxWidth - 2*mxLeft
)

// renderMatrixPicture is docs/lock-matrix.svg from tools/loadtest/results.json.
func renderMatrixPicture(data []byte) ([]byte, error) {
	return drawReport(data, "tools/loadtest/results.json", "no runs", func(r loadrun.MatrixReport) bool { return len(r.Runs) == 0 }, matrixSVG)
}

// oversoldUnits is how many units a run sold beyond its stock (0 when
// none), and whether the audit called it oversold.
func oversoldUnits(r *loadrun.Result) (int64, bool) {
	n := r.Orders - r.InitialStock
	if n < 0 {
		n = 0
	}
	return n, r.Oversold || n > 0
}

// verdictParts splits a matrix verdict ("holds (as expected)", "**breaks,
// expected to hold**", ...) into its word, a note and its colour.
func verdictParts(m loadrun.MatrixRun) (word, note, colour string) {
	bad := strings.Contains(m.Verdict, "**") || m.Result == nil
	v := strings.ReplaceAll(m.Verdict, "**", "")
	word, note = v, ""
	if i := strings.IndexAny(v, "(,"); i > 0 {
		word, note = strings.TrimSpace(v[:i]), strings.Trim(strings.TrimSpace(v[i+1:]), "()")
	}
	switch {
	case bad:
		colour = colBad
	case strings.HasPrefix(word, "hold") || strings.HasPrefix(word, "held"):
		colour = colGood
	default:
		colour = colWarn
	}
	if r := m.Result; r != nil && !r.Consistent && !bad {
		note, colour = "inconsistent", colBad
	}
	return word, note, colour
}

// settingTitle names a setting and describes it from its first run.
func settingTitle(setting string, r *loadrun.Result) (string, string) {
	title := setting
	switch setting {
	case "normal":
		title = "Normal"
	case "slow":
		title = "Slow business"
	case "async":
		title = "Async"
	}
	if r == nil {
		return title, ""
	}
	if setting == "async" {
		return title, fmt.Sprintf("%d users × %d purchases at the same instant, stock %d; admission by the Lua script on one Redis "+
			"or on the Redis Cluster (\"cluster, N\": the voucher's stock in N buckets), orders written by the consumer from the streams", r.Users, r.Dups, r.InitialStock)
	}
	when := "at the same instant"
	if r.SpacingMS > 0 {
		when = fmt.Sprintf("%d ms apart", r.SpacingMS)
	}
	desc := fmt.Sprintf("%d users × %d purchases %s, stock %d, lease %s", r.Users, r.Dups, when, r.InitialStock, r.LockTTL)
	if r.CriticalDelay != "" && r.CriticalDelay != "0s" {
		desc += fmt.Sprintf(", %s of work inside the lock: every duplicate arrives while the first purchase is inside, so one past the lock is a breach too", r.CriticalDelay)
	} else {
		desc += "; a duplicate past the lock came after the first purchase had finished"
	}
	return title, desc
}

func matrixSVG(rep loadrun.MatrixReport) []byte {
	d := newSVG(mxWidth, "Load-test matrix: duplicate purchases by where they were stopped, per lock mode")
	y := 30.0
	y = d.heading(mxLeft, y, mxCaption, "Which locks hold: duplicate purchases by where they were stopped",
		"Every lock mode on 1 and 2 instances, every user buying several times. A lock breaks when a duplicate gets past it. "+
			"Oversold must be 0 in every run, whatever the lock: the stock UPDATE is conditional and the unique key is the last line of defence.")
	x := d.legend(mxLeft, y, colLock, "stopped by the lock")
	x = d.legend(x, y, colPast, "past the lock, by the order's check")
	x = d.legend(x, y, colUnique, "only by the unique key")
	for _, m := range rep.Runs {
		if m.Setting == "async" {
			x = d.legend(x, y, colScript, "by the async admission script")
			break
		}
	}
	d.badge(x+14, y+1, 26, colGoodBg, colGood, "0")
	d.text(x+33, y, "", "", "", "units oversold")
	y += 14

	// Panels in the order the settings first appear.
	var settings []string
	seen := map[string]bool{}
	for _, m := range rep.Runs {
		if !seen[m.Setting] {
			seen[m.Setting] = true
			settings = append(settings, m.Setting)
		}
	}
	for _, s := range settings {
		var runs []loadrun.MatrixRun
		var first *loadrun.Result
		for _, m := range rep.Runs {
			if m.Setting == s {
				runs = append(runs, m)
				if first == nil {
					first = m.Result
				}
			}
		}
		y = matrixPanel(d, y+22, s, first, runs)
	}

	y += 10
	mc := rep.Machine
	source := fmt.Sprintf("Source: tools/loadtest/results.json of `make loadtest-matrix` (go -C tools run ./cmd/harness matrix), run on %s in %d s; %s, %s cores, %s; %s, %s, %s, %s.",
		rep.Generated, rep.ElapsedS, mc["uname"], mc["cores"], testbed.Or(mc["cpu"], "unknown CPU"),
		testbed.Or(mc["k6"], "k6 ?"), testbed.Or(mc["mariadb"], "MariaDB ?"), testbed.Or(mc["redis"], "Redis ?"), testbed.Or(mc["zookeeper"], "ZooKeeper ?"))
	lines := svgWrap(source, mxCaption, 11)
	lines = append(lines, svgWrap("Counts from the instances' /metrics (lock refused, unique key) and the audit of the database (oversold). "+
		"The table: tools/loadtest/RESULTS.md. Drawn by `make pictures` (go -C tools run ./cmd/harness pictures); never edited by hand.", mxCaption, 11)...)
	y = d.caption(mxLeft, y, lines...)
	return d.finish(y + 4)
}

// rowGroup is the name in a row's first column: the lock mode, or for an
// async row its Redis ("one Redis", "cluster, 8": the voucher's buckets).
func rowGroup(m loadrun.MatrixRun) string {
	switch {
	case m.Setting != "async":
		return m.Mode
	case m.Redis == "cluster":
		return fmt.Sprintf("cluster, %d", m.Buckets)
	}
	return "one Redis"
}

// matrixPanel draws one setting's rows from y and returns the y after it.
func matrixPanel(d *svgDoc, y float64, setting string, first *loadrun.Result, runs []loadrun.MatrixRun) float64 {
	title, desc := settingTitle(setting, first)
	d.text(mxLeft, y, "head", "", "", title)
	for i, l := range svgWrap(desc, mxWidth-mxLeft-160, 12) {
		d.text(mxLeft+140, y+float64(i)*15, "sub", "", "", l)
		if i > 0 {
			y += 15
		}
	}
	y += 20
	d.text(mxLeft, y, "col", "", "", "mode")
	d.text(mxInstX, y, "col", "middle", "", "inst.")
	d.text(mxBarX, y, "col", "", "", "DUPLICATE_ORDER answers")
	async := setting == "async"
	d.text(mxLockX, y, "col", "end", "", map[bool]string{false: "lock", true: "script"}[async])
	d.text(mxPastX, y, "col", "end", "", "past")
	d.text(mxUniqX, y, "col", "end", "", "unique")
	d.text(mxOverX, y, "col", "middle", "", "oversold")
	d.text(mxVerdX, y, "col", "", "", "verdict")
	y += 6

	end := 0.0
	for _, m := range runs {
		if r := m.Result; r != nil {
			end = max(end, float64(r.LockRefused+r.PastLock+r.UniqueKey+r.ScriptRefused))
		}
	}
	end = niceCeil(end)
	bottom := y + float64(len(runs))*mxRowH
	// Stripes and separators first, then the grid, then the rows on top.
	for i, m := range runs {
		rowY := y + float64(i)*mxRowH
		d.stripe(i, mxLeft, mxWidth, rowY, mxRowH)
		if i > 0 && rowGroup(m) != rowGroup(runs[i-1]) {
			d.line(mxLeft-6, rowY, mxWidth-mxLeft+6, rowY, colGrid)
		}
	}
	d.axis(mxBarX, mxBarW, y, bottom+2, end, "answers")
	for i, m := range runs {
		rowY := y + float64(i)*mxRowH
		base := rowY + 13
		if i == 0 || rowGroup(m) != rowGroup(runs[i-1]) {
			d.text(mxLeft, base, "bold", "", "", rowGroup(m))
		}
		d.text(mxInstX, base, "num", "middle", "", fmt.Sprint(m.Instances))
		word, note, colour := verdictParts(m)
		r := m.Result
		if r == nil {
			d.text(mxBarX, base, "bold", "", colBad, "no result: "+svgClip(m.Problem, mxVerdX-mxBarX-90, mxFontPx))
			d.text(mxVerdX, base, "bold", "", colour, word)
			continue
		}
		segX := mxBarX
		for _, seg := range []struct {
			n      int64
			colour string
		}{{r.ScriptRefused, colScript}, {r.LockRefused, colLock}, {r.PastLock, colPast}, {r.UniqueKey, colUnique}} {
			w := mxBarW * float64(seg.n) / end
			d.rect(segX, rowY+(mxRowH-mxBarH)/2, w, mxBarH, seg.colour)
			if label := fmt.Sprint(seg.n); seg.n > 0 && svgTextWidth(label, 10)+6 <= w {
				d.text(segX+w/2, base-1.5, "in num", "middle", "", label)
			}
			segX += w
		}
		stopped := r.LockRefused
		if async {
			stopped = r.ScriptRefused
		}
		d.text(mxLockX, base, "num", "end", "", fmt.Sprint(stopped))
		pastColour := ""
		if r.PastLock > 0 && first != nil && first.CriticalDelay != "" && first.CriticalDelay != "0s" {
			pastColour = colWarn
		}
		d.text(mxPastX, base, "num", "end", pastColour, fmt.Sprint(r.PastLock))
		uniqColour := ""
		if r.UniqueKey > 0 {
			uniqColour = colBad
		}
		d.text(mxUniqX, base, "num", "end", uniqColour, fmt.Sprint(r.UniqueKey))
		if n, over := oversoldUnits(r); over {
			label := fmt.Sprint(n)
			if n == 0 {
				label = "yes"
			}
			d.badge(mxOverX, base, 34, colBad, "#ffffff", label)
		} else {
			d.badge(mxOverX, base, 26, colGoodBg, colGood, "0")
		}
		d.text(mxVerdX, base, "bold", "", colour, word)
		if note != "" {
			d.text(mxVerdX+svgBoldWidth(word, mxFontPx)+6, base, "small", "", "", note)
		}
	}
	return bottom + 18
}
