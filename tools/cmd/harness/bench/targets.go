package bench

import (
	"fmt"
	"strings"
)

// benchTargets are the target ratios and the CPU figures of this run
// ("-": not measured).
type benchTargets struct {
	T1, T2         string // sync lua ÷ slap; soldout ÷ noop
	G1, GP         string // sync lua with group commit ÷ slap; its -pertxn run ÷ slap
	A1, A2, A3, A4 string // async ÷ sync lua; async ÷ admit at the server's depth; drain ÷ insert; k6 p99 ms
	C1, C2         string // server and Redis CPU us per admitted async order
	N1             string // async ÷ async without the drain (-nodrain)
	AR, KR, NR     string // the async, k6 and -nodrain runs of the first async lock mode
	AdmitP         string // the admission limit at AR's pipelining depth ("admit-P<d>"; "" without the depth)
	DrainR         string
	DrainKeptUp    bool
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
	t.A4 = benchMS(b.get(t.KR, "p99_us"))
	t.C1, t.C2 = dash(b.get(t.AR, "cpu_server_order")), dash(b.get(t.AR, "cpu_redis_order"))
	return t
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
