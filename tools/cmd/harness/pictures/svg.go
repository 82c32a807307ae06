package pictures

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A small SVG writer for the pictures (harness pictures): rectangles, lines
// and text on a light background, escaped with encoding/xml. Standard
// library only. The output is a deterministic function of the input, so the
// committed pictures can be compared with a fresh rendering.

// Colours of the pictures, GitHub's light palette: readable on the white
// background every picture draws for itself (also in GitHub's dark mode).
const (
	colInk       = "#1f2328" // text
	colMuted     = "#59636e" // secondary text
	colGrid      = "#d1d9e0" // axes and grid lines
	colStripe    = "#f6f8fa" // every other row
	colGood      = "#1a7f37" // a verdict that holds, a target met
	colGoodBg    = "#dafbe1" // the badge of a zero that must be zero
	colBad       = "#cf222e" // oversold, a violation, a failure
	colBadBg     = "#ffebe9"
	colWarn      = "#bc4c00" // a target missed, an expected breach
	colLock      = "#2da44e" // duplicates stopped by the lock
	colPast      = "#d4a72c" // duplicates stopped past the lock
	colUnique    = "#cf222e" // duplicates only the unique key stopped
	colScript    = "#1b7c83" // duplicates the async admission script refused
	colMeasured  = "#0969da" // a measured rate
	colLimit     = "#afb8c1" // the machine's limit it is compared with
	colProjected = "#54aeff" // a rate projected from CPU per order, not measured
	colStatus200 = "#2da44e"
	colStatus409 = "#54aeff"
	colStatus503 = "#d4a72c"
	colStatus500 = "#cf222e"
	colStatusOth = "#8250df"
)

// svgStyle is the style sheet of every picture (internal CSS works in an
// SVG shown through <img>, as GitHub shows README pictures).
const svgStyle = `text{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif;font-size:12px;fill:` + colInk + `}
.title{font-size:18px;font-weight:600}
.sub{font-size:12px;fill:` + colMuted + `}
.head{font-size:14px;font-weight:600}
.col{font-size:11px;font-weight:600;fill:` + colMuted + `}
.small{font-size:11px;fill:` + colMuted + `}
.num{font-variant-numeric:tabular-nums}
.bold{font-weight:600}
.in{font-size:10px;fill:#ffffff;font-weight:600}`

// svgDoc collects a picture's elements. finish wraps them in the root
// element once the height is known.
type svgDoc struct {
	width float64
	title string
	body  strings.Builder
}

func newSVG(width float64, title string) *svgDoc {
	return &svgDoc{width: width, title: title}
}

// svgEsc is s escaped for XML text and attribute values.
func svgEsc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// svgNum formats a coordinate: at most one decimal, no trailing zeros.
func svgNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// svgAttrs joins optional extra attributes ("name=\"value\"" each).
func svgAttrs(extra []string) string {
	if len(extra) == 0 {
		return ""
	}
	return " " + strings.Join(extra, " ")
}

func (d *svgDoc) rect(x, y, w, h float64, fill string, extra ...string) {
	if w <= 0 || h <= 0 {
		return
	}
	fmt.Fprintf(&d.body, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`+"\n", svgNum(x), svgNum(y), svgNum(w), svgNum(h), fill, svgAttrs(extra))
}

// stripe shades row i of a table when i is odd. The table spans a picture
// width wide, inside margins of left; the row is h high at y.
func (d *svgDoc) stripe(i int, left, width, y, h float64) {
	if i%2 == 1 {
		d.rect(left-6, y, width-2*left+12, h, colStripe)
	}
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, stroke string, extra ...string) {
	fmt.Fprintf(&d.body, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"%s/>`+"\n", svgNum(x1), svgNum(y1), svgNum(x2), svgNum(y2), stroke, svgAttrs(extra))
}

// text writes s at (x, y) (the baseline). class names a style of svgStyle
// ("" for the default), anchor is start, middle or end, fill "" for the
// class's colour.
func (d *svgDoc) text(x, y float64, class, anchor, fill, s string) {
	var extra []string
	if class != "" {
		extra = append(extra, `class="`+class+`"`)
	}
	if anchor != "" && anchor != "start" {
		extra = append(extra, `text-anchor="`+anchor+`"`)
	}
	if fill != "" {
		extra = append(extra, `style="fill:`+fill+`"`)
	}
	fmt.Fprintf(&d.body, `<text x="%s" y="%s"%s>%s</text>`+"\n", svgNum(x), svgNum(y), svgAttrs(extra), svgEsc(s))
}

// badge is a rounded box with centred text: the zero that must be zero.
func (d *svgDoc) badge(cx, y, w float64, bg, fg, s string) {
	d.rect(cx-w/2, y-12, w, 16, bg, `rx="4"`)
	d.text(cx, y, "num bold", "middle", fg, s)
}

// legend draws a colour key at (x, y) and returns the x after it.
func (d *svgDoc) legend(x, y float64, colour, label string) float64 {
	d.rect(x, y-10, 12, 12, colour, `rx="2"`)
	d.text(x+17, y, "", "", "", label)
	return x + 17 + svgTextWidth(label, 12) + 22
}

// caption writes lines of small text from y down and returns the y after.
func (d *svgDoc) caption(x, y float64, lines ...string) float64 {
	for _, l := range lines {
		d.text(x, y, "small", "", "", l)
		y += 15
	}
	return y
}

// finish is the whole document, height h.
func (d *svgDoc) finish(h float64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="%s">`+"\n",
		svgNum(d.width), svgNum(h), svgNum(d.width), svgNum(h), svgEsc(d.title))
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s\n</style>\n", svgEsc(d.title), svgEsc(svgStyle))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff" stroke="%s"/>`+"\n", svgNum(d.width), svgNum(h), colGrid)
	b.WriteString(d.body.String())
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// svgTextWidth estimates the width of s in pixels at a font size (a
// sans-serif averages a little under 0.6 em per character; wide enough
// for layout, never measured).
func svgTextWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.58
}

// svgBoldWidth estimates the width of s in a bold face.
func svgBoldWidth(s string, size float64) float64 {
	return svgTextWidth(s, size) * 1.08
}

// svgClip shortens s at a word boundary to fit width pixels at size,
// ending it with an ellipsis when it was cut.
func svgClip(s string, width, size float64) string {
	if svgTextWidth(s, size) <= width {
		return s
	}
	n := int(width/(size*0.58)) - 1
	r := []rune(s)
	if n < 1 {
		return "…"
	}
	cut := string(r[:n])
	if i := strings.LastIndexAny(cut, " ,;("); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:(") + "…"
}

// fmtThousands formats v rounded to an integer with comma separators.
func fmtThousands(v float64) string {
	neg := v < 0
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// niceCeil is the smallest of 1, 2, 4, 6, 8 times a power of ten that is at
// least v (an axis's end, whose quarters are round too). 1 for v <= 0.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 4, 6, 8, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// axis draws vertical grid lines and their labels under a bar area from x
// (value 0) to x+width (value end), between y0 and y1, in steps of a
// quarter of end. unit is appended to the last label.
func (d *svgDoc) axis(x, width, y0, y1, end float64, unit string) {
	for i := 0; i <= 4; i++ {
		v := end * float64(i) / 4
		px := x + width*float64(i)/4
		d.line(px, y0, px, y1, colGrid, `stroke-width="1"`)
		label := fmtThousands(v)
		if v != math.Round(v) {
			label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if i == 4 && unit != "" {
			label += " " + unit
		}
		d.text(px, y1+13, "small num", "middle", "", label)
	}
}

// svgWrap breaks s into lines of at most width pixels at size, at spaces.
func svgWrap(s string, width, size float64) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && svgTextWidth(line+" "+w, size) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// heading draws a title and its subtitle wrapped at width from y. It
// returns the y below them.
func (d *svgDoc) heading(x, y, width float64, title, sub string) float64 {
	d.text(x, y, "title", "", "", title)
	y += 20
	for _, l := range svgWrap(sub, width, 12) {
		d.text(x, y, "sub", "", "", l)
		y += 16
	}
	return y + 8
}
