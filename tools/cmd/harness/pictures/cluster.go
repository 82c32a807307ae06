package pictures

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"seckill/tools/cmd/harness/bench"
	"seckill/tools/cmd/harness/testbed"
)

// docs/bench-cluster.svg draws the Redis Cluster block of `harness bench`
// (tools/bench/results.json, tools/cmd/harness/bench/cluster.go). Async admission on one
// Redis stands beside it. Two panels share one scale, with a row per run. The
// first shows the admissions/s measured on the machine the run shared. Every
// Redis process, the server, wrk and MariaDB used the same cores. The second
// shows the admissions/s the busiest Redis process could take on a core of
// its own. That is coreRate of its µs per order, as RESULTS.md projects it.
// Each master's µs per order is shown too.

// Layout of the cluster picture (pixels).
const (
	clWidth  = 900.0
	clLeft   = 16.0
	clBarX   = 190.0
	clBarW   = 400.0
	clValueX = 598.0
	clColW   = 66.0 // the right-aligned columns of µs, ending at clWidth-clLeft
	clBarH   = 13.0
	clRowH   = 20.0
)

// errNoPictureData says that a results file holds no block a picture
// draws (a run without it): the picture is skipped, as without the file.
var errNoPictureData = errors.New("nothing to draw")

// clusterRow is one run of the picture.
type clusterRow struct {
	label     string
	rps       float64
	okRPS     bool
	server    string    // µs per order ("" when absent)
	redis     string    // µs per order, every node summed
	masters   []float64 // µs per order of each master (NaN when absent); nil for one Redis
	busiest   int       // index into masters, -1 for one Redis or none
	busiestUS float64
	okBusiest bool
}

// clusterRows are one Redis (async-<mode>) and the cluster runs, in the
// order of results.json.
func clusterRows(b benchData) []clusterRow {
	var roles []string
	for _, n := range b.ClusterNodes {
		roles = append(roles, n.Role)
	}
	str := func(r *bench.JSONRun, key string) string {
		if v, ok := r.Figures[key].(float64); ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	one := clusterRow{label: "one Redis", busiest: -1}
	if r := b.run("async-" + b.asyncMode()); r != nil {
		one.rps, one.okRPS = b.fig(benchFigure{r.Name, "rps", 1})
		one.server, one.redis = str(r, "cpu_server_order"), str(r, "cpu_redis_order")
		one.busiestUS, one.okBusiest = b.fig(benchFigure{r.Name, "cpu_redis_order", 1})
	}
	rows := []clusterRow{one}
	for i := range b.Runs {
		r := &b.Runs[i]
		if !strings.HasPrefix(r.Name, "cluster-") {
			continue
		}
		buckets := strings.TrimPrefix(r.Name, "cluster-")
		if v, ok := r.Figures["buckets"].(float64); ok {
			buckets = fmt.Sprint(v)
		}
		row := clusterRow{label: "cluster, " + buckets + " bucket", busiest: -1}
		if buckets != "1" {
			row.label += "s"
		}
		row.rps, row.okRPS = b.fig(benchFigure{r.Name, "rps", 1})
		row.server, row.redis = str(r, "cpu_server_order"), str(r, "cpu_redis_order")
		us := func(node int) (float64, bool) {
			return b.fig(benchFigure{r.Name, fmt.Sprintf("cpu_node%d_order", node), 1})
		}
		for i, role := range roles {
			if role != "master" {
				continue
			}
			v, ok := us(i)
			if !ok {
				v = math.NaN()
			}
			row.masters = append(row.masters, v)
		}
		if node, v, ok := bench.BusiestMaster(roles, us); ok {
			row.busiestUS, row.okBusiest = v, true
			row.busiest = 0 // the masters before it
			for _, role := range roles[:node] {
				if role == "master" {
					row.busiest++
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// RenderClusterPicture is docs/bench-cluster.svg from
// tools/bench/results.json. errNoPictureData when the run had no cluster
// block.
func RenderClusterPicture(data []byte) ([]byte, error) {
	var b benchData
	if err := json.Unmarshal(data, &b.JSON); err != nil {
		return nil, fmt.Errorf("tools/bench/results.json: %w", err)
	}
	if len(b.Runs) == 0 {
		return nil, fmt.Errorf("tools/bench/results.json: no runs")
	}
	rows := clusterRows(b)
	if len(rows) == 1 {
		return nil, fmt.Errorf("tools/bench/results.json: no cluster-<buckets> runs: %w", errNoPictureData)
	}
	return clusterSVG(b, rows), nil
}

func clusterSVG(b benchData, rows []clusterRow) []byte {
	mc := b.Machine
	d := newSVG(clWidth, "Redis Cluster and stock buckets: async admission measured, and projected on a core per master")
	y := 30.0
	d.text(clLeft, y, "title", "", "", fmt.Sprintf("Redis Cluster and stock buckets, %s, %s cores", testbed.Or(b.Started, "?"), testbed.Or(mc["nproc"], "?")))
	y += 20
	masters, replicas := 0, 0
	for _, n := range b.ClusterNodes {
		if n.Role == "master" {
			masters++
		} else {
			replicas++
		}
	}
	for _, l := range svgWrap(fmt.Sprintf("Async admission (lua lock, wrk, %s connections, %s s per run) on one Redis and on a cluster of %d masters and %d replicas, "+
		"the voucher's stock in 1 to 8 buckets. Top: what this machine admitted, every Redis process, the server, wrk and MariaDB sharing its %s cores. "+
		"Bottom: what the busiest Redis process could admit on a core of its own, 1e6 ÷ its CPU µs per admitted order.",
		b.setting("conns"), b.setting("duration"), masters, replicas, testbed.Or(mc["nproc"], "?")), clWidth-2*clLeft, 12) {
		d.text(clLeft, y, "sub", "", "", l)
		y += 16
	}

	end := 0.0
	for _, r := range rows {
		end = max(end, r.rps, bench.CoreRate(r.busiestUS))
	}
	end = niceCeil(end * 1.02)
	col := func(i int) float64 { return clWidth - clLeft - float64(2-i)*clColW } // i = 0, 1, 2 from the left

	// Measured.
	y += 20
	d.text(clLeft, y, "head", "", "", "Measured on this machine: admitted orders/s")
	d.text(col(1), y, "col", "end", "", "server µs")
	d.text(col(2), y, "col", "end", "", "Redis µs")
	measured := func(r clusterRow) (float64, bool) { return r.rps, r.okRPS }
	y = clusterPanel(d, rows, y+8, end, colMeasured, measured, func(r clusterRow, ry float64) {
		if !r.okRPS {
			d.text(clBarX, ry, "small", "", colBad, "not measured")
		} else {
			d.text(clValueX, ry, "num", "", "", fmtValue(r.rps, "req/s"))
		}
		d.text(col(1), ry, "num", "end", "", testbed.Or(r.server, "-"))
		d.text(col(2), ry, "num", "end", "", testbed.Or(r.redis, "-"))
	})

	// Projected.
	y += 34
	d.text(clLeft, y, "head", "", "", "Projected: orders/s of the busiest Redis process on a core of its own")
	for i := range min(masters, 3) {
		d.text(col(i), y, "col", "end", "", fmt.Sprintf("M%d µs", i+1))
	}
	projected := func(r clusterRow) (float64, bool) { return bench.CoreRate(r.busiestUS), r.okBusiest }
	y = clusterPanel(d, rows, y+8, end, colProjected, projected, func(r clusterRow, ry float64) {
		if !r.okBusiest {
			d.text(clBarX, ry, "small", "", colBad, "not measured")
		} else {
			d.text(clValueX, ry, "num", "", "", fmtValue(bench.CoreRate(r.busiestUS), "orders/s"))
		}
		if r.masters == nil {
			if r.okBusiest {
				d.text(col(2), ry, "num", "end", "", fmt.Sprintf("the one process: %.1f", r.busiestUS))
			}
			return
		}
		for i, v := range r.masters {
			if i > 2 {
				break // more masters than columns: RESULTS.md has them
			}
			text, class := "-", "num"
			if !math.IsNaN(v) {
				text = fmt.Sprintf("%.1f", v)
			}
			if i == r.busiest {
				class = "num bold"
			}
			d.text(col(i), ry, class, "end", "", text)
		}
	})

	source := fmt.Sprintf("µs: CPU per admitted order from /proc over the wrk run; Redis µs: every node summed (one Redis: its only process); M1–M%d: the masters, the busiest in bold. "+
		"Dashed: one Redis. The projection assumes the busiest master alone bounds the rate; a cluster on separate machines was not measured.", max(masters, 1))
	lines := svgWrap(source, clWidth-2*clLeft, 11)
	lines = append(lines, svgWrap(fmt.Sprintf("Source: %s (make bench with the Redis Cluster block, go -C tools run ./cmd/harness bench), %s to %s; %s, %s cores (%s), %s; Redis %s, wrk %s; load average %s before, %s after. "+
		"Every figure: %s. Drawn by `make pictures` (go -C tools run ./cmd/harness pictures); never edited by hand.",
		clusterResultsJSON(b.Results), b.Started, strings.TrimPrefix(b.Finished, firstWord(b.Started)+" "), testbed.Or(mc["kernel"], "?"), testbed.Or(mc["nproc"], "?"), testbed.Or(mc["cpu"], "unknown CPU"), testbed.Or(mc["memory"], "?"),
		testbed.Or(mc["redis"], "?"), testbed.Or(mc["wrk"], "?"), testbed.Or(firstWord(mc["loadBefore"]), "?"), testbed.Or(firstWord(mc["loadAfter"]), "?"), testbed.Or(b.Results, "tools/bench/RESULTS.md")), clWidth-2*clLeft, 11)...)
	if len(b.Disturbed) > 0 {
		lines = append(lines, svgWrap("Disturbed by other work on the machine: "+strings.Join(b.Disturbed, "; "), clWidth-2*clLeft, 11)...)
	}
	y = d.caption(clLeft, y+26, lines...)
	return d.finish(y + 4)
}

// clusterResultsJSON is the results.json beside RESULTS.md.
func clusterResultsJSON(results string) string {
	if i := strings.LastIndex(results, "/"); i >= 0 {
		return results[:i+1] + "results.json"
	}
	return "tools/bench/results.json"
}

// clusterPanel draws a row per run from y, a bar of value (the measured or
// the projected rate) each, one Redis's (the first row's) dashed across.
// cells writes a row's texts at the baseline ry. It returns the y after
// the panel's axis.
func clusterPanel(d *svgDoc, rows []clusterRow, y, end float64, colour string, value func(clusterRow) (float64, bool), cells func(r clusterRow, ry float64)) float64 {
	top := y
	bottom := top + float64(len(rows))*clRowH
	for i := range rows {
		d.stripe(i, clLeft, clWidth, top+float64(i)*clRowH, clRowH)
	}
	d.axis(clBarX, clBarW, top, bottom+2, end, "")
	for i, r := range rows {
		ry := top + float64(i)*clRowH
		d.text(clLeft+4, ry+14, "", "", "", r.label)
		if v, ok := value(r); ok {
			d.rect(clBarX, ry+(clRowH-clBarH)/2, clBarW*v/end, clBarH, colour)
		}
		cells(r, ry+14)
	}
	if one, ok := value(rows[0]); ok {
		x := clBarX + clBarW*one/end
		d.line(x, top-2, x, bottom+2, colInk, `stroke-width="1.5"`, `stroke-dasharray="4 3"`)
	}
	return bottom + 15
}
