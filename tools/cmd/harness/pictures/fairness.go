package pictures

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"seckill/testkit/fairness"
	"seckill/tools/cmd/harness/testbed"
)

// Layout of docs/fairness.svg: three rows of bars (the bots' shares, the
// purchases, when the others learned the outcome).
const (
	frLeft   = 24.0
	frLabelW = 230.0
	frBarW   = 380.0
	frRowH   = 26.0
	frWidth  = 2*frLeft + frLabelW + frBarW + 90
)

// fairnessReport is tools/loadtest/fairness/results.json.
type fairnessReport struct {
	testbed.RunInfo
	Result *fairness.Result `json:"result"`
}

// renderFairnessPicture draws docs/fairness.svg from
// tools/loadtest/fairness/results.json.
func renderFairnessPicture(data []byte) ([]byte, error) {
	var rep fairnessReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("tools/loadtest/fairness/results.json: %w", err)
	}
	if rep.Result == nil || rep.Result.Buyers == 0 || rep.Result.Units == 0 {
		return nil, errNoPictureData
	}
	return fairnessSVG(rep), nil
}

// binomialRange is the range of k a two-sided exact binomial test at 5 %
// accepts for n draws of probability p.
func binomialRange(n int, p float64) (lo, hi int) {
	lo, hi = -1, -1
	for k := 0; k <= n; k++ {
		if fairness.BinomialTwoSided(k, n, p) >= 0.05 {
			if lo < 0 {
				lo = k
			}
			hi = k
		}
	}
	return lo, hi
}

// frBar draws one labelled bar of value v on a scale ending at end, with
// text after it, and returns the y of the next row.
func frBar(d *svgDoc, y, v, end float64, colour, label, value string) float64 {
	d.text(frLeft, y+14, "", "", "", label)
	w := 0.0
	if end > 0 {
		w = frBarW * math.Min(v/end, 1)
	}
	d.rect(frLeft+frLabelW, y+3, w, 15, colour)
	d.text(frLeft+frLabelW+w+6, y+14, "num", "", "", value)
	return y + frRowH
}

func fairnessSVG(rep fairnessReport) []byte {
	r := rep.Result
	title := fmt.Sprintf("The waiting room under bots: %s joiners, %s units", fmtThousands(float64(r.Buyers)), fmtThousands(float64(r.Units)))
	d := newSVG(frWidth, title)
	y := d.heading(frLeft, 30, frWidth-2*frLeft, title,
		fmt.Sprintf("Everyone joins before the start and is drawn in a seeded random order. %s bots join 5 times, poll and fire purchases without a token every 20 ms; "+
			"people join once and poll when Retry-After says. Two instances, one Redis.", fmtThousands(float64(r.Bots))))

	d.text(frLeft, y, "head", "", "", "The bots' share")
	y += 10
	lo, hi := binomialRange(r.Units, r.BotShareJoiners)
	end := niceCeil(100 * math.Max(r.BotShareJoiners, float64(hi)/float64(r.Units)) * 1.25)
	if lo >= 0 {
		x0 := frLeft + frLabelW + frBarW*100*float64(lo)/float64(r.Units)/end
		x1 := frLeft + frLabelW + frBarW*100*float64(hi)/float64(r.Units)/end
		d.rect(x0, y+frRowH+1, x1-x0, 19, colStripe, `stroke="`+colGrid+`"`)
	}
	y0 := y
	y = frBar(d, y, 100*r.BotShareJoiners, end, colLimit, "of the joiners",
		fmt.Sprintf("%.1f %% (%s of %s)", 100*r.BotShareJoiners, fmtThousands(float64(r.Bots)), fmtThousands(float64(r.Buyers))))
	y = frBar(d, y, 100*r.BotShareUnits, end, colMeasured, "of the units sold",
		fmt.Sprintf("%.1f %% (%d of %d)", 100*r.BotShareUnits, r.SoldByBots, r.Units))
	d.axis(frLeft+frLabelW, frBarW, y0, y, end, "%")
	y += 30
	verdict := "indistinguishable from their share of the joiners"
	if r.PValue < 0.05 {
		verdict = "differs from their share of the joiners"
	}
	y = d.caption(frLeft, y, svgWrap(fmt.Sprintf("Exact two-sided binomial test of %d bot units in %d at p = %.3f: p-value %.3f, %s (5 %% level). "+
		"Grey band: the bot units such a test accepts at 5 %% (%d to %d of %d).",
		r.SoldByBots, r.Units, r.BotShareJoiners, r.PValue, verdict, lo, hi, r.Units), frWidth-2*frLeft, 11)...)
	y += 12

	d.text(frLeft, y, "head", "", "", "The purchases")
	y += 10
	pend := niceCeil(float64(max(r.TokenlessRefused, r.Sold)))
	y0 = y
	y = frBar(d, y, float64(r.Sold), pend, colStatus200, "sold with an admission token", fmtThousands(float64(r.Sold)))
	y = frBar(d, y, float64(r.TokenlessRefused), pend, colStatus409, "without a token: refused (403)", fmtThousands(float64(r.TokenlessRefused)))
	d.text(frLeft, y+14, "", "", "", "without a token: sold")
	bg, fg := colGoodBg, colGood
	if r.TokenlessSold > 0 {
		bg, fg = colBadBg, colBad
	}
	d.badge(frLeft+frLabelW+20, y+14, 40, bg, fg, fmt.Sprint(r.TokenlessSold))
	y += frRowH
	d.axis(frLeft+frLabelW, frBarW, y0, y, pend, "")
	y += 30

	d.text(frLeft, y, "head", "", "", "When the others learned the outcome")
	y += 10
	sec := func(v time.Duration) float64 { return v.Seconds() }
	lend := niceCeil(sec(r.LearnedMax))
	y0 = y
	y = frBar(d, y, sec(r.LearnedP99), lend, colMeasured, "after the last sale: p99", fmt.Sprintf("%.1f s", sec(r.LearnedP99)))
	y = frBar(d, y, sec(r.LearnedMax), lend, colMeasured, "after the last sale: max", fmt.Sprintf("%.1f s", sec(r.LearnedMax)))
	d.axis(frLeft+frLabelW, frBarW, y0, y, lend, "s")
	y += 30
	y = d.caption(frLeft, y, svgWrap(fmt.Sprintf("%s joiners still waiting at the sell-out learned it on their next poll; %d never did. Polls wait at most 5 s.",
		fmtThousands(float64(r.Learned)), r.Unlearned), frWidth-2*frLeft, 11)...)
	y += 8
	source := fmt.Sprintf("Source: tools/loadtest/fairness/results.json of `%s`, run on %s in %.0f s; %s.",
		rep.Command, rep.Date, rep.ElapsedS, testbed.Or(rep.Machine, "machine not recorded"))
	lines := svgWrap(source, frWidth-2*frLeft, 11)
	lines = append(lines, "Drawn by `make pictures`; never edited by hand.")
	y = d.caption(frLeft, y, lines...)
	return d.finish(y + 4)
}
