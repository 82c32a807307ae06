package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The arithmetic of `harness bench`, without I/O: CPU accounting from /proc
// samples, ratios and target verdicts, figure formatting. The number
// formats (printf "%.0f" and the like) are part of RESULTS.md's content.

// figures holds one run's figures by name, or one limit's. They are the
// strings RESULTS.md shows. A missing figure is an empty cell.
type benchFigures map[string]string

// num reads a figure as a number. ok is false when it is empty or not one.
func figNum(s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return x, err == nil
}

// numOr0 reads a figure as a number, 0 when it is not one (awk's x + 0).
func figNum0(s string) float64 {
	x, _ := figNum(s)
	return x
}

// fmtRate is "%.0f" of a rate ("" stays "0", as awk's printf did).
func fmtRate(s string) string { return fmt.Sprintf("%.0f", figNum0(s)) }

// ms shows microseconds as milliseconds with two decimals, "-" when empty.
func benchMS(us string) string {
	if us == "" {
		return "-"
	}
	return fmt.Sprintf("%.2f", figNum0(us)/1000)
}

// ratio is a ÷ b with two decimals, "-" when a is empty or b is not positive.
func benchRatio(a, b string) string {
	bv := figNum0(b)
	if a == "" || bv <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", figNum0(a)/bv)
}

// atLeast is the verdict of a target "measured ≥ required" ("-": not measured).
func atLeast(measured string, required float64) bool {
	return measured != "-" && measured != "" && figNum0(measured) >= required
}

// atMost is the verdict of a target "measured ≤ required".
func atMost(measured string, required float64) bool {
	return measured != "-" && measured != "" && figNum0(measured) <= required
}

// verdict shows a target's verdict as RESULTS.md does.
func benchVerdict(met bool) string {
	if met {
		return "yes"
	}
	return "**no**"
}

// procTicks reads utime + stime (clock ticks) from the text of /proc/PID/stat.
func procTicks(stat string) (uint64, bool) {
	i := strings.LastIndex(stat, ") ")
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+2:])
	// fields after "comm) ": state=1 ... utime=12 stime=13
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + s, true
}

// machineTicks reads the machine's busy and total clock ticks from
// /proc/stat. Idle counts idle + iowait.
func machineTicks(stat string) (busy, total uint64, ok bool) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu" {
			continue
		}
		var idle uint64
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			total += v
			if i == 3 || i == 4 {
				idle += v
			}
		}
		return total - idle, total, true
	}
	return 0, 0, false
}

// cpuSample is one reading of the meter. It holds the CPU ticks of the
// server, MariaDB, Redis and the load generator. It holds the machine's busy
// and total ticks too. And MariaDB's Questions, Com_stmt_prepare and
// Com_stmt_close.
type cpuSample struct {
	Server, MariaDB, Redis, Client float64
	Nodes                          []float64 // each cluster node (Redis is their sum then)
	Busy, Total                    float64
	DB                             [3]float64
}

// meterFigures turns two samples into a run's CPU figures. They are the
// machine's busy share and each process's share ("share": server / client /
// MariaDB / Redis). Then the rest, CPU microseconds per response and MariaDB
// statements per response. n is the number of responses, hz the clock ticks
// per second.
func meterFigures(a, b cpuSample, n, hz float64) benchFigures {
	bu, t := b.Busy-a.Busy, b.Total-a.Total
	s, m, r, w := b.Server-a.Server, b.MariaDB-a.MariaDB, b.Redis-a.Redis, b.Client-a.Client
	f := benchFigures{}
	pct := func(x float64) float64 {
		if t == 0 {
			return 0
		}
		return 100 * x / t
	}
	f["busy"] = fmt.Sprintf("%.0f", pct(bu))
	// The rest: CPU busy outside the server, the load generator, MariaDB
	// and Redis. That is other work on the machine, the Redlock nodes and
	// ZooKeeper too. It is in % of the whole machine.
	rest := pct(bu - (s + m + r + w))
	if rest < 0 {
		rest = 0
	}
	f["rest"] = fmt.Sprintf("%.0f", rest)
	if t != 0 {
		f["share"] = fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", pct(s), pct(w), pct(m), pct(r))
	} else {
		f["share"] = ""
	}
	perResp := func(d float64) string {
		if n == 0 {
			return "0"
		}
		return fmt.Sprintf("%.0f", 1e6*d/hz/n)
	}
	f["cpu_server"] = perResp(s)
	f["cpu_client"] = perResp(w)
	f["cpu_mariadb"] = perResp(m)
	f["cpu_redis"] = perResp(r)
	f["db_stmts"] = dbStmts(a.DB, b.DB, n)
	return f
}

// orderCPUFigures turns two samples into the CPU per admitted order. It
// divides the server's and Redis's CPU over the run, in microseconds, by the
// orders admitted. Each 200 answer is an order, sync or async. Figures have
// one decimal. None when no order was admitted. Unlike meterFigures'
// per-response figures, refusals count in no denominator. A 503 while a
// voucher is frozen is one.
func orderCPUFigures(a, b cpuSample, orders, hz float64) benchFigures {
	if orders <= 0 || hz <= 0 {
		return benchFigures{}
	}
	per := func(d float64) string { return fmt.Sprintf("%.1f", 1e6*d/hz/orders) }
	return benchFigures{"cpu_server_order": per(b.Server - a.Server), "cpu_redis_order": per(b.Redis - a.Redis)}
}

// dbStmts is MariaDB's queries / prepares / closes per unit (n of them),
// "" when n is 0.
func dbStmts(a, b [3]float64, n float64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f / %.1f / %.1f", (b[0]-a[0])/n, (b[1]-a[1])/n, (b[2]-a[2])/n)
}

// awkNum prints a number as awk's print does (integers as such, others
// with %.6g).
func awkNum(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e16 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// prefixed returns the keys of f that start with prefix, sorted, without it.
func figPrefixed(f benchFigures, prefix string) []string {
	var out []string
	for k := range f {
		if strings.HasPrefix(k, prefix) {
			out = append(out, strings.TrimPrefix(k, prefix))
		}
	}
	sort.Strings(out)
	return out
}

// refusals is "CODE n, ..." of a run's non-2xx responses by envelope code,
// "0" when there were none.
func benchRefusals(f benchFigures) string {
	var parts []string
	for _, c := range figPrefixed(f, "code_") {
		parts = append(parts, c+" "+f["code_"+c])
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// non2xxCounted sums the status_<code> figures of codes ≥ 300 (what
// rotate.lua's response() counted).
func non2xxCounted(f benchFigures) int64 {
	var n int64
	for _, c := range figPrefixed(f, "status_") {
		code, err := strconv.Atoi(c)
		if err == nil && code >= 300 {
			v, _ := strconv.ParseInt(f["status_"+c], 10, 64)
			n += v
		}
	}
	return n
}

// promHistogram reads figures from a /metrics text. The seckill route's
// duration histogram gives srv_within5 and srv_p99_le. They are the share
// within 5 ms and the bucket holding p99, in ms. batch_mean and batches are
// the consumers' batch sizes. pipeline_mean and pipelines are the admissions
// per round trip to Redis (seckill_admission_pipeline_size). An admission
// sent alone counts 1. group_mean and groups are the sync orders per commit
// (seckill_sync_group_size). It returns those it could compute.
func promHistogram(text, route string) benchFigures {
	f := benchFigures{}
	want := `route="` + route + `"`
	type bucket struct {
		le  string
		cnt float64
	}
	var bs []bucket
	plain := map[string]float64{} // the samples without labels, by name
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "seckill_http_request_duration_seconds_bucket{") && strings.Contains(line, want) {
			le, ok := labelValue(line, "le")
			if !ok {
				continue
			}
			fl := strings.Fields(line)
			bs = append(bs, bucket{le, figNum0(fl[len(fl)-1])})
		} else if fl := strings.Fields(line); len(fl) == 2 && !strings.ContainsAny(fl[0], "#{") {
			plain[fl[0]] = figNum0(fl[1])
		}
	}
	var total float64
	for _, b := range bs {
		if b.le == "+Inf" {
			total = b.cnt
		}
	}
	if total > 0 {
		for _, b := range bs {
			if b.le == "0.005" {
				f["srv_within5"] = fmt.Sprintf("%.2f", 100*b.cnt/total)
			}
		}
		p := ""
		for _, b := range bs {
			if p == "" && b.cnt >= 0.99*total {
				p = b.le
			}
		}
		if p == "+Inf" {
			f["srv_p99_le"] = "inf"
		} else {
			f["srv_p99_le"] = strconv.FormatFloat(figNum0(p)*1000, 'g', 6, 64)
		}
	}
	for _, h := range []struct{ metric, mean, count, format string }{
		{"seckill_async_batch_size", "batch_mean", "batches", "%.1f"},
		{"seckill_sync_group_size", "group_mean", "groups", "%.2f"},
		{"seckill_admission_pipeline_size", "pipeline_mean", "pipelines", "%.2f"},
	} {
		if n := plain[h.metric+"_count"]; n > 0 {
			f[h.mean] = fmt.Sprintf(h.format, plain[h.metric+"_sum"]/n)
			f[h.count] = fmt.Sprintf("%d", int64(n))
		}
	}
	// Purchases the shedder answered 503 with Retry-After (its design
	// under a queue longer than SECKILL_SHED_TARGET): orderChecks counts
	// them apart from the failures.
	if n, ok := plain["seckill_purchases_shed_total"]; ok {
		f["shed"] = fmt.Sprintf("%d", int64(n))
	}
	return f
}

// labelValue is the value of the label name in a sample line of the
// Prometheus text format.
func labelValue(line, name string) (string, bool) {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return "", false
	}
	v := line[i+len(name)+2:]
	return v[:strings.Index(v, `"`)], true
}

// pipelineDepth is redis-benchmark's -P for a run's pipeline_mean. It is the
// mean rounded, at least 1. 0 when there is no mean.
func pipelineDepth(mean string) int {
	m, ok := figNum(mean)
	if !ok {
		return 0
	}
	return max(1, int(math.Round(m)))
}

// admitPName names the admission limit at the depth of a run's pipeline_mean.
// The name is "admit-P<depth>", or "" when there is no mean.
func admitPName(mean string) string {
	d := pipelineDepth(mean)
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("admit-P%d", d)
}

// wrkFigures reads the "BENCH <name> <value>" lines rotate.lua prints.
func wrkFigures(out string) benchFigures {
	f := benchFigures{}
	for _, line := range strings.Split(out, "\n") {
		fl := strings.Fields(line)
		if len(fl) >= 3 && fl[0] == "BENCH" {
			f[fl[1]] = fl[2]
		}
	}
	return f
}

// redisBenchCSV reads the last line of redis-benchmark --csv:
// "test","rps","avg","min","p50","p95","p99","max".
func redisBenchCSV(line string) (rps, p50us, p99us string, ok bool) {
	p := strings.Split(strings.ReplaceAll(strings.TrimSpace(line), `"`, ""), ",")
	if len(p) < 7 {
		return "", "", "", false
	}
	rps = p[1]
	if rps == "" || strings.Trim(rps, "0123456789.") != "" {
		return "", "", "", false
	}
	return rps, fmt.Sprintf("%.0f", figNum0(p[4])*1000), fmt.Sprintf("%.0f", figNum0(p[6])*1000), true
}

// slapSeconds reads mariadb-slap's "Average number of seconds to run all
// queries" ("" when absent).
func slapSeconds(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Average number of seconds") {
			if i := strings.Index(line, ": "); i >= 0 {
				fl := strings.Fields(line[i+2:])
				if len(fl) > 0 {
					return awkNum(figNum0(fl[0]))
				}
			}
		}
	}
	return ""
}

// voucherFacts is what the bench reads about one voucher after a run. From
// the database: initial stock, stock, orders and distinct buyers. In async
// mode also the audit's pending count, Redis's stock and its buyers set size.
type voucherFacts struct {
	Initial, Stock, Orders, Distinct int64
	Async                            bool
	Pending, RedisStock, Buyers      int64
}
