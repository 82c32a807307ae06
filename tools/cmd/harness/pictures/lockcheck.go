package pictures

import (
	"fmt"
	"slices"

	"seckill/tools/cmd/harness/lockrun"
	"seckill/tools/cmd/harness/testbed"
)

// Layout of docs/lock-check.svg: one row per mode, one column per fault
// and fencing setting.
const (
	lcpLeft  = 24.0
	lcpModeW = 96.0
	lcpCellW = 84.0
	lcpRowH  = 26.0
)

// renderLockCheckPicture draws docs/lock-check.svg from
// tools/lock-check/results.json.
func renderLockCheckPicture(data []byte) ([]byte, error) {
	return drawReport(data, "tools/lock-check/results.json", "no rows", func(r lockrun.Report) bool { return len(r.Rows) == 0 }, lockCheckSVG)
}

// lcVerdictColours are the badge colours of a verdict: background, text.
func lcVerdictColours(v string) (string, string) {
	switch v {
	case "holds":
		return colGoodBg, colGood
	case "fenced":
		return "#ddf4ff", colMeasured
	case "lock fails":
		return "#fff1e5", colWarn
	case "fails":
		return colBadBg, colBad
	}
	return colStripe, colMuted
}

func lockCheckSVG(rep lockrun.Report) []byte {
	var modes, faults []string
	cell := map[[3]string]lockrun.Row{}
	for _, r := range rep.Rows {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
		if !slices.Contains(faults, r.Fault) {
			faults = append(faults, r.Fault)
		}
		cell[[3]string{r.Mode, r.Fault, fmt.Sprint(r.Fencing)}] = r
	}
	width := 2*lcpLeft + lcpModeW + float64(2*len(faults))*lcpCellW
	d := newSVG(width, "Lock histories under faults, checked for linearizability")
	y := 30.0
	y = d.heading(lcpLeft, y, width-2*lcpLeft, "Lock histories under faults, checked for linearizability",
		"Two client processes take lock:order:<userId> and update a register in MariaDB under it; one process is paused, "+
			"partitioned from the lock service or the database, or slowed. Porcupine checks every recorded operation against a mutex "+
			"(one holder) and a register (no lost update, no stale write). Fencing on: the database refuses a write with an older token.")
	x := lcpLeft
	for _, v := range []struct{ name, label string }{
		{"holds", "holds: no violation"}, {"fenced", "fenced: two holders, register kept"},
		{"lock fails", "lock fails: two holders"}, {"fails", "fails: register violated"},
	} {
		bg, fg := lcVerdictColours(v.name)
		d.rect(x, y-10, 12, 12, bg, `rx="2"`, `stroke="`+fg+`"`)
		d.text(x+17, y, "", "", "", v.label)
		x += 17 + svgTextWidth(v.label, 12) + 22
	}
	y += 28
	for i, f := range faults {
		cx := lcpLeft + lcpModeW + float64(2*i+1)*lcpCellW
		d.text(cx, y, "head", "middle", "", f)
		d.line(cx-lcpCellW+6, y+6, cx+lcpCellW-6, y+6, colGrid)
		d.text(cx-lcpCellW/2, y+20, "col", "middle", "", "fencing off")
		d.text(cx+lcpCellW/2, y+20, "col", "middle", "", "on")
	}
	y += 28
	for i, m := range modes {
		top := y + float64(i)*lcpRowH
		d.stripe(i, lcpLeft, width, top, lcpRowH)
		d.text(lcpLeft, top+17, "bold", "", "", m)
		for j, f := range faults {
			for k, fencing := range []bool{false, true} {
				cx := lcpLeft + lcpModeW + float64(2*j+k)*lcpCellW + lcpCellW/2
				r, ok := cell[[3]string{m, f, fmt.Sprint(fencing)}]
				if !ok {
					d.text(cx, top+17, "small", "middle", "", "·")
					continue
				}
				bg, fg := lcVerdictColours(r.Verdict)
				label := r.Verdict
				if r.MutexViolations+r.RegisterViolations > 0 {
					label = fmt.Sprintf("%s %d/%d", r.Verdict, r.MutexViolations, r.RegisterViolations)
				}
				d.badge(cx, top+17, lcpCellW-8, bg, fg, label)
			}
		}
	}
	y += float64(len(modes))*lcpRowH + 22
	source := fmt.Sprintf("Source: tools/lock-check/results.json of `%s` (go -C tools run ./cmd/harness lockcheck), run on %s in %.0f s; %s.",
		rep.Command, rep.Date, rep.ElapsedS, testbed.Or(rep.Machine, "machine not recorded"))
	lines := svgWrap(source, width-2*lcpLeft, 11)
	lines = append(lines, svgWrap("Numbers: users whose history violates the mutex / the register. A dot: not run (fencing needs a token the mode does not mint; redlock-restart is for redsync and multi, failover for the single-Redis modes). "+
		"Each violation's shortest history is linked from tools/lock-check/RESULTS.md. Drawn by `make pictures`; never edited by hand.", width-2*lcpLeft, 11)...)
	y = d.caption(lcpLeft, y, lines...)
	return d.finish(y + 4)
}
