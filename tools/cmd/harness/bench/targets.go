package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// benchTargets are the target ratios and the CPU figures of this run
// ("-": not measured).
type benchTargets struct {
	T1, T2         string // sync lua ÷ slap; soldout ÷ noop
	G1, GP         string // sync lua with group commit ÷ slap; its -pertxn run ÷ slap
	A1, A2, A3, A4 string // async ÷ sync lua; async ÷ admit at the server's depth; drain ÷ insert; k6 p99 async ÷ no-op
	A5             string // k6 failures and dropped iterations, async and no-op runs together
	K6Failed       string // k6 iterations of both runs without a 200 ("-": no k6 runs)
	K6Dropped      string // k6 dropped iterations of both runs ("-": no k6 runs)
	C1, C2         string // server and Redis CPU us per admitted async order
	N1             string // async ÷ async without the drain (-nodrain)
	AR, KR, NR     string // the async, k6 and -nodrain runs of the first async lock mode
	AdmitP         string // the admission limit at AR's pipelining depth ("admit-P<d>"; "" without the depth)
	DrainR         string
	DrainKeptUp    bool
}

// k6MaxRate is the most arrivals per second the latency run asks of k6.
// Beside the server on this 2-core machine k6 sends at most about 3,000
// requests a second, and near that its own lag is what the p99 shows: at
// 3,000 the no-op endpoint alone had 2,433 dropped arrivals and a p50 of
// 5 ms (run of 2026-11-27 23:23 UTC). Half of it leaves k6 room.
const k6MaxRate = 1500

// k6P99Ratio is the latency goal: async's k6 p99 at most this many times
// the no-op endpoint's at the same rate in the same run.
const k6P99Ratio = 1.5

// k6Rate is the latency run's rate: a quarter of the async maximum (asyncRPS,
// the wrk run's req/s), at most k6MaxRate; "" without an async figure.
func k6Rate(asyncRPS string) string {
	r := int64(figNum0(asyncRPS) / 4)
	if r <= 0 {
		return ""
	}
	return strconv.FormatInt(min(r, k6MaxRate), 10)
}

// targets computes the ratios from the figures.
func (b reporter) targets() benchTargets {
	t := benchTargets{
		T1: benchRatio(b.get("sync-lua", "rps"), b.get("slap", "rps")),
		T2: benchRatio(b.get("soldout", "rps"), b.get("noop", "rps")),
		G1: benchRatio(b.get("sync-lua", "rps"), b.get("slap", "rps")),
		GP: benchRatio(b.get("sync-lua-pertxn", "rps"), b.get("slap", "rps")),
	}
	alm := ""
	if len(b.cfg.AsyncLockModes) > 0 {
		alm = b.cfg.AsyncLockModes[0]
	}
	t.AR, t.KR = "async-"+alm, "k6-async-"+alm
	t.NR = t.AR + "-nodrain"
	t.A1 = benchRatio(b.get(t.AR, "rps"), b.get("sync-lua", "rps"))
	// The admission script alone at the depth the server pipelined it.
	t.AdmitP = admitPName(b.get(t.AR, "pipeline_mean"))
	t.A2 = "-"
	if t.AdmitP != "" {
		t.A2 = benchRatio(b.get(t.AR, "rps"), b.get(t.AdmitP, "rps"))
	}
	t.N1 = benchRatio(b.get(t.AR, "rps"), b.get(t.NR, "rps"))
	// The drain rate. When the consumers kept up with the load (no
	// backlog), their rate during the load stands for it (a lower bound).
	t.DrainR = b.get(t.AR, "drain_rate")
	if t.DrainR == "" && b.get(t.AR, "orders") != "" {
		t.DrainR = fmt.Sprintf("%.0f", figNum0(b.get(t.AR, "orders"))/float64(b.cfg.Duration))
		t.DrainKeptUp = true
	}
	t.A3 = benchRatio(t.DrainR, b.get("insert", "rps"))
	t.A4 = benchRatio(b.get(t.KR, "p99_us"), b.get(t.KR+"-noop", "p99_us"))
	t.K6Failed, t.K6Dropped, t.A5 = b.k6Faults(t.KR, t.KR+"-noop")
	t.C1, t.C2 = dash(b.get(t.AR, "cpu_server_order")), dash(b.get(t.AR, "cpu_redis_order"))
	return t
}

// k6Faults sums, over the k6 runs given, the iterations that did not end
// in a 200 (no answer, or another status) and the dropped iterations (k6
// had no VU free to start them), and both together. All three are "-" when
// a run is missing.
func (b reporter) k6Faults(runs ...string) (failed, dropped, both string) {
	var f, d float64
	for _, r := range runs {
		if b.get(r, "requests") == "" {
			return "-", "-", "-"
		}
		f += figNum0(b.get(r, "requests")) - figNum0(b.get(r, "status_200"))
		d += figNum0(b.get(r, "dropped"))
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return g(f), g(d), g(f + d)
}

// invariants is "ok" or the number of violations of a run.
func (b reporter) invariants(name string) string {
	n := 0
	for _, v := range b.violations {
		if strings.HasPrefix(v, name+":") {
			n++
		}
	}
	if n == 0 {
		return "ok"
	}
	return fmt.Sprintf("**%d violated**", n)
}
