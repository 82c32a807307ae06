package pictures

import (
	"fmt"
	"strings"

	"seckill/tools/cmd/harness/faults"
	"seckill/tools/cmd/harness/testbed"
)

// docs/faults.svg: the fault suite's table (tools/faults/results.json, written by
// `harness faults`) as a picture. One row per case: its name, modes and
// fault. What the clients got as a bar by HTTP status and as counts. The
// units oversold and the 200s lost (a green 0, or red). Whether the audit
// found the voucher consistent. The verdict.

// Layout of the faults picture (pixels).
const (
	ftWidth = 1000.0
	ftLeft  = 16.0
	ftTextW = 370.0 // the case's name and fault
	ftBarX  = 396.0
	ftBarW  = 180.0
	ftOverX = 818.0 // centres of the badges and of the consistency
	ftLostX = 866.0
	ftConsX = 915.0
	ftVerdX = 955.0
	ftRowH  = 50.0
	ftBarH  = 14.0
	ftSubPx = 11.0
)

// ftStatuses are the status columns: the key in caseResult.Status, the
// header, the colour and the right edge of the count.
var ftStatuses = []struct {
	key, head, colour string
	x                 float64
}{
	{"200", "200", colStatus200, 622},
	{"409", "409", colStatus409, 662},
	{"503", "503", colStatus503, 702},
	{"500", "500", colStatus500, 738},
	{"other", "other", colStatusOth, 778},
}

// renderFaultsPicture is docs/faults.svg from tools/faults/results.json.
func renderFaultsPicture(data []byte) ([]byte, error) {
	return drawReport(data, "tools/faults/results.json", "no cases", func(r faults.Report) bool { return len(r.Cases) == 0 }, faultsSVG)
}

// faultVerdictColour is the colour of a case's verdict: pass, shown (an
// expected-weak design demonstrated), FAIL, ERROR.
func faultVerdictColour(v string) string {
	switch v {
	case "pass":
		return colGood
	case "shown":
		return colWarn
	}
	return colBad
}

func faultsSVG(rep faults.Report) []byte {
	d := newSVG(ftWidth, "Fault suite: what every request got while a dependency was killed or frozen")
	y := 30.0
	y = d.heading(ftLeft, y, ftWidth-2*ftLeft, "Fault suite: what every request got while a dependency died",
		"Each case kills or freezes one dependency in the middle of a paced load over two instances (an instance, Redis, "+
			"the Sentinel primary, MariaDB, a Redlock node, a lock holder past its lease) and audits every answer against the database. "+
			"Oversold and lost must be 0 in every case; 503 while a dependency is down is the expected answer, 500 never is.")
	x := ftLeft
	for _, s := range ftStatuses {
		label := "HTTP " + s.head
		if s.key == "other" {
			label = "other (transport errors; 403 to purchases without an admission token)"
		}
		x = d.legend(x, y, s.colour, label)
	}
	y += 30

	d.text(ftLeft, y, "col", "", "", "case (lock, order mode): fault")
	d.text(ftBarX, y, "col", "", "", "answers by status")
	for _, s := range ftStatuses {
		d.text(s.x, y, "col", "end", "", s.head)
	}
	d.text(ftOverX, y, "col", "middle", "", "oversold")
	d.text(ftLostX, y, "col", "middle", "", "lost")
	d.text(ftConsX, y, "col", "middle", "", "consistent")
	d.text(ftVerdX, y, "col", "", "", "verdict")
	y += 6
	for i, c := range rep.Cases {
		faultsRow(d, y+float64(i)*ftRowH, i, c)
	}
	y += float64(len(rep.Cases))*ftRowH + 22

	source := fmt.Sprintf("Source: tools/faults/results.json of `%s` (go -C tools run ./cmd/harness faults), run on %s in %.0f s, exit status %d; %s.",
		testbed.Or(rep.Command, "make faults"), rep.Date, rep.ElapsedS, rep.Status, testbed.Or(rep.Machine, "machine not recorded"))
	if len(rep.Settings) > 0 {
		source += " Settings: " + strings.Join(rep.Settings, ", ") + "."
	}
	lines := svgWrap(source, ftWidth-2*ftLeft, 11)
	lines = append(lines, svgWrap("Lost: 200s whose order is neither in the database nor reported failed to its owner. What each case does and measures: "+
		"tools/faults/RESULTS.md and tools/faults/README.md. Drawn by `make pictures` (go -C tools run ./cmd/harness pictures); never edited by hand.", ftWidth-2*ftLeft, 11)...)
	y = d.caption(ftLeft, y, lines...)
	return d.finish(y + 4)
}

// faultsRow draws case c, the i-th row, with its top at y.
func faultsRow(d *svgDoc, y float64, i int, c faults.CaseResult) {
	d.stripe(i, ftLeft, ftWidth, y, ftRowH)
	line1 := y + 16
	d.text(ftLeft, line1, "bold", "", "", c.Name)
	d.text(ftLeft+svgBoldWidth(c.Name, 12)+8, line1, "small", "", "", c.LockMode+", "+c.OrderMode)
	// The fault (or the error of a case that could not run) in at most
	// two lines.
	what, colour := c.Fault, ""
	if c.Error != "" {
		what, colour = "error: "+c.Error, colBad
	}
	lines := svgWrap(what, ftTextW, ftSubPx)
	if len(lines) > 2 {
		lines = []string{lines[0], svgClip(strings.Join(lines[1:], " "), ftTextW, ftSubPx)}
	}
	for k, l := range lines {
		d.text(ftLeft, line1+14*float64(k+1), "small", "", colour, l)
	}
	total := 0
	for _, s := range ftStatuses {
		total += c.Status[s.key]
	}
	mid := y + ftRowH/2
	segX := ftBarX
	for _, s := range ftStatuses {
		n := c.Status[s.key]
		if total > 0 {
			w := ftBarW * float64(n) / float64(total)
			d.rect(segX, mid-ftBarH/2, w, ftBarH, s.colour)
			if label := fmt.Sprint(n); n > 0 && svgTextWidth(label, 10)+6 <= w {
				d.text(segX+w/2, mid+3.5, "in num", "middle", "", label)
			}
			segX += w
		}
		colour := ""
		if s.key == "500" && n > 0 {
			colour = colBad
		}
		d.text(s.x, mid+4, "num", "end", colour, fmt.Sprint(n))
	}
	if c.Error != "" || c.Verdict == "ERROR" {
		// The case could not run: nothing was audited.
		for _, x := range []float64{ftOverX, ftLostX, ftConsX} {
			d.text(x, mid+4, "", "middle", colMuted, "–")
		}
		d.text(ftVerdX, mid+4, "bold", "", faultVerdictColour(c.Verdict), c.Verdict)
		return
	}
	if over := c.Orders - c.InitialStock; c.Oversold || over > 0 {
		label := fmt.Sprint(max(over, 0))
		if over <= 0 {
			label = "yes"
		}
		d.badge(ftOverX, mid+4, 34, colBad, "#ffffff", label)
	} else {
		d.badge(ftOverX, mid+4, 26, colGoodBg, colGood, "0")
	}
	if c.Lost > 0 {
		d.badge(ftLostX, mid+4, 34, colBad, "#ffffff", fmt.Sprint(c.Lost))
	} else {
		d.badge(ftLostX, mid+4, 26, colGoodBg, colGood, "0")
	}
	if c.Consistent {
		d.text(ftConsX, mid+4, "bold", "middle", colGood, "yes")
	} else {
		d.text(ftConsX, mid+4, "bold", "middle", colBad, "no")
	}
	d.text(ftVerdX, mid+4, "bold", "", faultVerdictColour(c.Verdict), c.Verdict)
}
