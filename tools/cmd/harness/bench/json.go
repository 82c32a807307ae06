package bench

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// JSON is results.json: every figure of the run, for tools (charts, a
// dashboard). Figures are numbers where RESULTS.md shows one number, else
// strings ("34 / 4 / 37 / 5": see the *_parts fields).
type JSON struct {
	Schema     int               `json:"schema"`
	Started    string            `json:"started"`
	Finished   string            `json:"finished"`
	Machine    map[string]string `json:"machine"`
	Settings   map[string]any    `json:"settings"`
	Limits     []JSONRun         `json:"limits"`
	Runs       []JSONRun         `json:"runs"` // wrk runs (then the cluster block's), then k6 runs
	Profiled   []JSONRun         `json:"profiled"`
	Targets    []JSONTarget      `json:"targets"`
	Violations []string          `json:"violations"`
	Disturbed  []string          `json:"disturbed"`
	Commands   []string          `json:"commands"`
	Results    string            `json:"results"` // RESULTS.md, relative to the repository
	OutDir     string            `json:"outDir"`
	// ClusterNodes are the nodes of the Redis Cluster block, masters first
	// (absent without the block). Its runs are cluster-<buckets>.
	ClusterNodes []JSONNode `json:"clusterNodes,omitempty"`
	// CommandCosts are the Redis work per admitted order by node and
	// command (cost.go; COMMANDS.md), absent when none was measured.
	CommandCosts []*costRun `json:"commandCosts,omitempty"`
	// AdmissionProfile names the files of BENCH_ADMISSION_PROFILE's
	// profiles, relative to the repository (absent without them).
	AdmissionProfile *benchJSONProfile `json:"admissionProfile,omitempty"`
}

// benchJSONProfile is the admission profiles' entry of results.json.
type benchJSONProfile struct {
	Run   string   `json:"run"`
	Files []string `json:"files"`
}

// JSONRun is one run or limit of results.json with its figures.
type JSONRun struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"` // limit, wrk, k6
	OrderMode string         `json:"orderMode,omitempty"`
	LockMode  string         `json:"lockMode,omitempty"`
	Tool      string         `json:"tool,omitempty"`
	OK        bool           `json:"ok"` // no violation of this run
	Figures   map[string]any `json:"figures"`
}

// The names of the targets in results.json (docs/bench.svg finds them by
// these names).
const (
	TargetSyncSlap    = "sync lua req/s ÷ mariadb-slap txn/s"
	TargetSoldoutNoop = "sold-out req/s ÷ no-op req/s"
	targetGroupSlap   = "sync lua with group commit req/s ÷ mariadb-slap txn/s"
	TargetAsyncSync   = "async req/s ÷ sync lua req/s"
	TargetAsyncAdmit  = "async req/s ÷ EVALSHA seckill.lua ops/s at the server's pipelining depth"
	TargetDrainInsert = "drain orders/s ÷ single-row INSERT rows/s"
	TargetK6P99       = "k6 p99 async ÷ no-op at a quarter of the async req/s, at most 1,500"
	TargetK6Faults    = "k6 failures and dropped iterations, async and no-op"
	TargetViolations  = "invariant violations, all runs"
	targetServerCPU   = "server CPU us per admitted async order"
	targetRedisCPU    = "Redis CPU us per admitted async order"
	TargetNoDrain     = "async req/s ÷ async req/s without the consumers writing"
)

// JSONTarget is one target of results.json: measured against required.
type JSONTarget struct {
	Issue    string   `json:"issue"`
	Name     string   `json:"name"`
	Measured *float64 `json:"measured"` // null: not measured
	Op       string   `json:"op"`       // ">=" or "<="
	Required float64  `json:"required"`
	Met      bool     `json:"met"`
}

// jsonFigures converts a run's figures: numbers as numbers, "a / b / c"
// lists also as arrays (key_parts), the rest as strings. t_end and cmd out.
func jsonFigures(f benchFigures) map[string]any {
	out := map[string]any{}
	for k, v := range f {
		if k == "t_end" {
			continue
		}
		if x, ok := figNum(v); ok {
			out[k] = x
			continue
		}
		out[k] = v
		if strings.Contains(v, " / ") {
			var parts []float64
			for _, p := range strings.Split(v, " / ") {
				x, ok := figNum(p)
				if !ok {
					parts = nil
					break
				}
				parts = append(parts, x)
			}
			if parts != nil {
				out[k+"_parts"] = parts
			}
		}
	}
	return out
}

func (b reporter) resultsJSON(t benchTargets) JSON {
	c := b.cfg
	rel := func(p string) string { return strings.TrimPrefix(p, b.root+"/") }
	j := JSON{
		Schema: 1, Started: b.info["start"], Finished: b.info["end"],
		Machine: map[string]string{
			"nproc": b.info["nproc"], "cpu": b.info["cpu"], "memory": b.info["mem"], "kernel": b.info["kernel"],
			"loadBefore": b.info["load_before"], "loadAfter": b.info["load_after"], "go": b.info["go"],
			"mariadb": b.info["mariadb"], "innodbFlushLogAtTrxCommit": b.info["flush"], "redis": b.info["redis"],
			"wrk": b.info["wrk"], "k6": b.k6ver, "build": rel(b.build),
		},
		Settings: map[string]any{
			"duration": c.Duration, "threads": c.Threads, "conns": c.Conns, "users": c.Users, "asyncUsers": c.AsyncUsers,
			"skipUsers": c.SkipUsers, "orderModes": c.OrderModes, "lockModes": c.LockModes, "asyncLockModes": c.AsyncLockModes,
			"k6Rate": c.K6Rate, "drainTimeout": c.DrainTimeout, "redisN": c.RedisN, "slapTxns": c.SlapTxns, "port": c.Port,
			"profile": strings.Fields(c.ProfileSetting),
		},
		Violations: append([]string{}, b.violations...),
		Disturbed:  append([]string{}, b.disturbed...),
		Results:    rel(c.Results), OutDir: rel(c.Out),
	}
	j.CommandCosts = b.costs
	for _, cmd := range b.commands {
		j.Commands = append(j.Commands, strings.ReplaceAll(cmd, b.root+"/", ""))
	}
	if p := b.admission; p != nil {
		jp := &benchJSONProfile{Run: p.Run, Files: []string{}}
		for _, f := range p.Files {
			jp.Files = append(jp.Files, rel(filepath.Join(p.Dir, f)))
		}
		j.AdmissionProfile = jp
	}
	run := func(name, kind, tool string) JSONRun {
		b.mu.Lock()
		f := jsonFigures(b.runs[name])
		b.mu.Unlock()
		if cmd, ok := f["cmd"].(string); ok {
			f["cmd"] = strings.ReplaceAll(cmd, b.root+"/", "")
		}
		r := JSONRun{Name: name, Kind: kind, Tool: tool, OK: b.invariants(name) == "ok", Figures: f}
		switch {
		case name == "soldout":
			r.OrderMode, r.LockMode = "sync", "lua"
		case kind == "k6" || strings.HasPrefix(name, "profile-k6-"):
			r.OrderMode = "async"
			r.LockMode = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(name, "profile-"), "k6-async-"), "-noop")
		case kind == "wrk":
			r.OrderMode, r.LockMode = runModes(name)
		}
		return r
	}
	limit := func(name, tool string, extra map[string]any) {
		b.mu.Lock()
		_, ok := b.runs[name]
		b.mu.Unlock()
		if !ok {
			return
		}
		r := run(name, "limit", tool)
		for k, v := range extra {
			r.Figures[k] = v
		}
		j.Limits = append(j.Limits, r)
	}
	n := func(k string) any {
		if x, ok := figNum(b.info[k]); ok {
			return x
		}
		return nil
	}
	limit("noop", "wrk", nil)
	limit("acquire", "redis-benchmark", map[string]any{"calls": c.RedisN})
	limit("release", "redis-benchmark", map[string]any{"calls": c.RedisN, "deleted": n("rel_deleted")})
	limit("admit", "redis-benchmark", map[string]any{"calls": c.RedisN})
	if t.AdmitP != "" {
		limit(t.AdmitP, "redis-benchmark", map[string]any{"calls": c.RedisN})
	}
	limit("slap", "mariadb-slap", nil)
	limit("insert", "mariadb-slap", nil)
	for _, name := range append([]string{"soldout"}, b.rows...) {
		j.Runs = append(j.Runs, run(name, "wrk", "wrk"))
	}
	for _, name := range b.clusterRows {
		r := run(name, "wrk", "wrk")
		r.OrderMode, r.LockMode = "async", "lua"
		j.Runs = append(j.Runs, r)
	}
	for _, n := range b.clusterNodes_ {
		j.ClusterNodes = append(j.ClusterNodes, JSONNode{Addr: n.Addr, Role: n.Role})
	}
	for _, name := range b.k6Rows() {
		if strings.HasPrefix(name, "profile-") {
			continue
		}
		j.Runs = append(j.Runs, run(name, "k6", "k6"))
	}
	names := make([]string, 0)
	for _, name := range b.profiled {
		names = append(names, name)
		if b.get(name+"-noop", "requests") != "" {
			names = append(names, name+"-noop")
		}
	}
	sort.Strings(names)
	for _, name := range names {
		kind, tool := "wrk", "wrk"
		if strings.HasPrefix(name, "profile-k6-") {
			kind, tool = "k6", "k6"
		} else if strings.HasSuffix(name, "-drain") {
			kind, tool = "drain", ""
		}
		j.Profiled = append(j.Profiled, run(name, kind, tool))
	}
	target := func(issue, name, measured, op string, required float64) {
		tg := JSONTarget{Issue: issue, Name: name, Op: op, Required: required}
		if x, ok := figNum(measured); ok {
			tg.Measured = &x
		}
		if op == ">=" {
			tg.Met = atLeast(measured, required)
		} else {
			tg.Met = atMost(measured, required)
		}
		j.Targets = append(j.Targets, tg)
	}
	target("4", TargetSyncSlap, t.T1, ">=", 0.6)
	target("4, 13", TargetSoldoutNoop, t.T2, ">=", 0.9)
	if c.wantAsync() {
		target("5", TargetAsyncSync, t.A1, ">=", 8)
		target("5, 13", TargetAsyncAdmit, t.A2, ">=", 0.4)
		target("5", TargetDrainInsert, t.A3, ">=", 1)
		target("36", TargetK6P99, t.A4, "<=", k6P99Ratio)
		target("36", TargetK6Faults, t.A5, "<=", 0)
		target("13", targetServerCPU, t.C1, "<=", 60)
		target("13", targetRedisCPU, t.C2, "<=", 30)
		target("13", TargetNoDrain, t.N1, ">=", 0.8)
	}
	target("4, 5", TargetViolations, strconv.Itoa(len(b.violations)), "<=", 0)
	target("21", targetGroupSlap, t.G1, ">=", 1.0)
	return j
}
