package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/tools/cmd/harness/testbed"
)

// The Redis work per admitted order, per node and per command. The bench
// reads INFO commandstats, INFO cpu and INFO stats of every Redis process of
// a run. It reads them before the wrk run and after the drain. So the
// consumers' work for the run's orders is inside. It also reads the server's
// round trips to each node from its /metrics
// (seckill_redis_round_trips_total, seckill_redis_commands_total).
//
// Three kinds of run are measured. The first is the async-lua run on one
// Redis. The second is the same on a Redis with a replica: the Sentinel
// master of SECKILL_TEST_SENTINEL_ADDRS. It is the fair partner of a cluster
// master, which has a replica too. The third is every run of the cluster
// block. COMMANDS.md beside BENCH_RESULTS holds the tables, and results.json
// their figures (commandCosts).
//
// commandstats counts the time inside commands, scripts included. INFO cpu
// counts the whole process. That includes the event loop, socket reads and
// writes, replication and the cluster bus. Both are per admitted order (wrk's
// 200 responses). Their difference is the work outside commands.

// costNode is one Redis process whose work a run measures.
type costNode struct {
	Addr string `json:"addr"`
	Role string `json:"role"` // redis (alone), master or replica
}

// nodeStats is one reading of a Redis process's INFO.
type nodeStats struct {
	Cmds    map[string]cmdStat
	CPU     float64 // used_cpu_sys + used_cpu_user, seconds
	ReplOut float64 // total_net_repl_output_bytes
	NetIn   float64 // total_net_input_bytes
	NetOut  float64 // total_net_output_bytes
	BusMsgs float64 // cluster bus messages sent and received (CLUSTER INFO)
}

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct{ Calls, Usec float64 }

// costCmd is one command's work per admitted order on one node.
type costCmd struct {
	Name        string  `json:"name"`
	Calls       float64 `json:"callsPerOrder"`
	Usec        float64 `json:"usPerOrder"`
	UsecPerCall float64 `json:"usPerCall"`
}

// costNodeResult is one node's work per admitted order in one run.
type costNodeResult struct {
	costNode
	CommandUs  float64   `json:"commandUsPerOrder"` // commandstats, summed
	CPUUs      float64   `json:"cpuUsPerOrder"`     // INFO cpu
	ReplBytes  float64   `json:"replBytesPerOrder"`
	InBytes    float64   `json:"inBytesPerOrder"`
	RoundTrips float64   `json:"roundTripsPerOrder"`   // the server's, to this node
	Depth      float64   `json:"commandsPerRoundTrip"` // the server's
	BusMsgs    float64   `json:"busMessagesPer1000Orders"`
	Commands   []costCmd `json:"commands"`
}

// costRun is one run's work per admitted order.
type costRun struct {
	Name   string           `json:"name"`
	Orders float64          `json:"orders"`
	Nodes  []costNodeResult `json:"nodes"`
	// Seconds is the window read: from before the wrk run to after the
	// drain. A node's idle work (its timers, the cluster bus) is in it.
	Seconds float64 `json:"seconds"`
	// The cluster runs' voucher and how many of its buckets each node's
	// slots hold (Nodes' order, 0 for a replica): see masters.go.
	Voucher   int64 `json:"voucher,omitempty"`
	Buckets   int   `json:"buckets,omitempty"`
	Placement []int `json:"bucketsPerNode,omitempty"`
}

// readNodeStats reads INFO commandstats, cpu and stats of addr, and the
// bus messages of CLUSTER INFO when addr is a cluster node.
func readNodeStats(ctx context.Context, addr string) (nodeStats, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	text, err := c.Info(ctx, "commandstats", "cpu", "stats").Result()
	if err != nil {
		return nodeStats{}, fmt.Errorf("INFO of %s: %w", addr, err)
	}
	s := parseNodeStats(text)
	if ci, err := c.ClusterInfo(ctx).Result(); err == nil {
		s.BusMsgs = busMessages(ci)
	}
	return s, nil
}

// busMessages is the cluster bus messages a node sent and received, from
// CLUSTER INFO's text.
func busMessages(text string) float64 {
	var n float64
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "cluster_stats_messages_sent" || k == "cluster_stats_messages_received") {
			n += figNum0(v)
		}
	}
	return n
}

// parseNodeStats reads the fields nodeStats holds from INFO's text.
func parseNodeStats(text string) nodeStats {
	s := nodeStats{Cmds: map[string]cmdStat{}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			s.CPU += figNum0(v)
		case "total_net_repl_output_bytes":
			s.ReplOut = figNum0(v)
		case "total_net_input_bytes":
			s.NetIn = figNum0(v)
		case "total_net_output_bytes":
			s.NetOut = figNum0(v)
		}
		name, isCmd := strings.CutPrefix(k, "cmdstat_")
		if !isCmd {
			continue
		}
		var cs cmdStat
		for _, f := range strings.Split(v, ",") {
			fk, fv, _ := strings.Cut(f, "=")
			switch fk {
			case "calls":
				cs.Calls = figNum0(fv)
			case "usec":
				cs.Usec = figNum0(fv)
			}
		}
		s.Cmds[name] = cs
	}
	return s
}

// costNodesOf is addr's process and its replicas (INFO replication).
func costNodesOf(ctx context.Context, addr, role string) []costNode {
	out := []costNode{{Addr: addr, Role: role}}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(k, "slave") || strings.Contains(k, "_") {
			continue
		}
		var ip, port string
		for _, f := range strings.Split(v, ",") {
			fk, fv, _ := strings.Cut(f, "=")
			switch fk {
			case "ip":
				ip = fv
			case "port":
				port = fv
			}
		}
		if ip != "" && port != "" {
			out = append(out, costNode{Addr: ip + ":" + port, Role: "replica"})
		}
	}
	return out
}

// costBegin reads the nodes of the run about to start (b.costNodes).
func (b costTables) costBegin(name string) {
	if len(b.costNodes) == 0 || strings.HasPrefix(name, "profile-") ||
		strings.HasSuffix(name, "-limits") || tracingRun(name) {
		return
	}
	var before []nodeStats
	for _, n := range b.costNodes {
		s, err := readNodeStats(b.ctx, n.Addr)
		if err != nil {
			b.logf("%s: no per-command figures: %v", name, err)
			return
		}
		before = append(before, s)
	}
	b.costBefore, b.costSince = before, time.Now()
}

// costEnd reads them again after the drain. It keeps the run's work per
// admitted order, with the server's round trips to each node.
func (b costTables) costEnd(name string) {
	before := b.costBefore
	b.costBefore = nil
	orders := figNum0(b.get(name, "status_200"))
	if len(before) != len(b.costNodes) || orders <= 0 {
		return
	}
	metrics, _ := testbed.ScrapeMetrics([]string{b.base})
	trips, cmds := nodeRoundTrips(metrics)
	if primary := b.costPrimaries(); len(trips) == 1 && len(primary) == 1 {
		// One Redis behind one client (a Sentinel client names itself
		// FailoverClient): its round trips are that Redis's.
		for k := range trips {
			trips[primary[0]], cmds[primary[0]] = trips[k], cmds[k]
		}
	}
	run := &costRun{Name: name, Orders: orders, Seconds: time.Since(b.costSince).Seconds()}
	for i, n := range b.costNodes {
		after, err := readNodeStats(b.ctx, n.Addr)
		if err != nil {
			b.logf("%s: no per-command figures: %v", name, err)
			return
		}
		r := costNodeResult{costNode: n}
		for cmd, a := range after.Cmds {
			d := cmdStat{Calls: a.Calls - before[i].Cmds[cmd].Calls, Usec: a.Usec - before[i].Cmds[cmd].Usec}
			if d.Calls <= 0 || cmd == "info" {
				continue
			}
			cc := costCmd{Name: cmd, Calls: d.Calls / orders, Usec: d.Usec / orders, UsecPerCall: d.Usec / d.Calls}
			r.CommandUs += cc.Usec
			r.Commands = append(r.Commands, cc)
		}
		sort.Slice(r.Commands, func(x, y int) bool { return r.Commands[x].Usec > r.Commands[y].Usec })
		r.CPUUs = (after.CPU - before[i].CPU) * 1e6 / orders
		r.ReplBytes = (after.ReplOut - before[i].ReplOut) / orders
		r.InBytes = (after.NetIn - before[i].NetIn) / orders
		r.BusMsgs = (after.BusMsgs - before[i].BusMsgs) * 1000 / orders
		if t := trips[n.Addr]; t > 0 {
			r.RoundTrips = t / orders
			r.Depth = cmds[n.Addr] / t
		}
		run.Nodes = append(run.Nodes, r)
	}
	b.costs = slices.DeleteFunc(b.costs, func(r *costRun) bool { return r.Name == name }) // a repeated run
	b.costs = append(b.costs, run)
	var parts []string
	for _, r := range run.Nodes {
		parts = append(parts, fmt.Sprintf("%s %s: commands %.1f us, CPU %.1f us", r.Addr, r.Role, r.CommandUs, r.CPUUs))
	}
	b.logf("%s: Redis work per admitted order (load and drain): %s", name, strings.Join(parts, "; "))
}

// costPrimaries are the addresses of the run's nodes that take writes.
func (b costTables) costPrimaries() []string {
	var out []string
	for _, n := range b.costNodes {
		if n.Role != "replica" {
			out = append(out, n.Addr)
		}
	}
	return out
}

// nodeRoundTrips reads the server's round trips and commands by node from
// its /metrics text.
func nodeRoundTrips(text string) (trips, cmds map[string]float64) {
	trips, cmds = map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		var dst map[string]float64
		switch {
		case strings.HasPrefix(line, "seckill_redis_round_trips_total{"):
			dst = trips
		case strings.HasPrefix(line, "seckill_redis_commands_total{"):
			dst = cmds
		default:
			continue
		}
		node, ok := labelValue(line, "node")
		if !ok {
			continue
		}
		f := strings.Fields(line)
		dst[node] += figNum0(f[len(f)-1])
	}
	return trips, cmds
}

// replicaRun is async-lua again on a Redis with a replica. That Redis is the
// master of SECKILL_TEST_SENTINEL_ADDRS, reached through Sentinel as the
// service does. Its name is async-lua-replica. Nothing when Sentinel is not
// configured.
func (b costTables) replicaRun() {
	sentinels, master := os.Getenv("SECKILL_TEST_SENTINEL_ADDRS"), os.Getenv("SECKILL_TEST_SENTINEL_MASTER")
	if sentinels == "" || master == "" {
		return
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: strings.Split(sentinels, ",")[0]})
	addr, err := sc.GetMasterAddrByName(b.ctx, master).Result()
	sc.Close()
	if err != nil || len(addr) != 2 {
		b.logf("no run on a Redis with a replica: Sentinel: %v", err)
		return
	}
	maddr := addr[0] + ":" + addr[1]
	nodes := costNodesOf(b.ctx, maddr, "master")
	single, singlePIDs, singleNodes := b.rdb, b.nodePIDs, b.costNodes
	defer func() { b.rdb, b.nodePIDs, b.costNodes = single, singlePIDs, singleNodes }()
	b.rdb = testbed.OpenRedis(maddr)
	defer b.rdb.Close()
	b.nodePIDs = nil
	for _, n := range nodes {
		b.nodePIDs = append(b.nodePIDs, redisPID(b.ctx, n.Addr))
	}
	b.costNodes = nodes
	lm := b.clusterLock()
	name := "async-" + lm + "-replica"
	b.attempt(name, func() {
		b.asyncRun(name, lm, false, "SECKILL_REDIS_ADDR=", "SECKILL_REDIS_SENTINEL_ADDRS="+sentinels, "SECKILL_REDIS_MASTER="+master)
	})
	b.rows = append(b.rows, name)
}

// clusterLock is the lock mode of the runs this file compares. It is
// BENCH_CLUSTER_LOCK, lua by default. Mode none shows what the consumers'
// per-user locks cost.
func (b costTables) clusterLock() string { return testbed.EnvOr("BENCH_CLUSTER_LOCK", "lua") }

// redisPID is the process id of the Redis at addr (0 when unknown).
func redisPID(ctx context.Context, addr string) int {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(infoField(info, "process_id"))
	return pid
}

// clusterOnly is BENCH_ONLY=cluster. It runs async-lua on one Redis, on a
// Redis with a replica, and the cluster block. Each comes with its
// per-command table.
func (b costTables) clusterOnly() {
	b.machine()
	b.logf("machine: %s x %s, %s, %s; load %s", b.info["nproc"], b.info["cpu"], b.info["mem"], b.info["kernel"], b.info["load_before"])
	b.cfg.AdmissionProfile = false
	lm := b.clusterLock()
	b.attempt("async-"+lm, func() { b.asyncRun("async-"+lm, lm, false) })
	b.rows = append(b.rows, "async-"+lm)
	b.replicaRun()
	b.clusterRuns()
}

// costByName is the measured run of that name (nil when none).
func (b costTables) costByName(name string) *costRun {
	for _, r := range b.costs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// costSums are a run's per-order sums. They are the masters' commandstats and
// CPU (or the one Redis's), the replicas' CPU, and the busiest master's CPU.
func costSums(r *costRun) (cmd, cpu, replicas, busiest float64) {
	for _, n := range r.Nodes {
		if n.Role == "replica" {
			replicas += n.CPUUs
			continue
		}
		cmd += n.CommandUs
		cpu += n.CPUUs
		busiest = math.Max(busiest, n.CPUUs)
	}
	return cmd, cpu, replicas, busiest
}

// writeCommands writes COMMANDS.md beside BENCH_RESULTS (nothing when no
// run was measured).
func (b costTables) writeCommands() {
	if len(b.costs) == 0 {
		return
	}
	path := filepath.Join(filepath.Dir(b.cfg.Results), "COMMANDS.md")
	if err := os.WriteFile(path, []byte(b.commandsMarkdown()), 0o644); err != nil {
		b.logf("COMMANDS.md: %v", err)
		return
	}
	js, err := json.MarshalIndent(b.costs, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(filepath.Dir(path), "commands.json"), append(js, '\n'), 0o644)
	}
	if err != nil {
		b.logf("commands.json: %v", err)
	}
	b.logf("wrote %s and commands.json beside it", path)
}

// commandsMarkdown is COMMANDS.md.
func (b costTables) commandsMarkdown() string {
	var w strings.Builder
	fmt.Fprintf(&w, `# Redis work per admitted order, by node and by command

Written by `+"`harness bench`"+` (tools/cmd/harness/bench/cost.go), %s, %s x %s,
load %s before and %s after. wrk %d s, %d connections, async, a new
user per request (lock mode %s). Every figure is per admitted order (wrk's 200 responses),
read from INFO before the wrk run and after the drain, so the consumers'
reads, locks and acknowledgements of the run's orders are inside.
Settings: BENCH_ONLY=%s BENCH_CLUSTER_BUCKETS=%q BENCH_DURATION=%d.

- *commands µs*: INFO commandstats, the time inside commands (scripts
  included), summed over the commands. Redis 7 counts the commands a
  script calls as well (get, hmget, sismember, decr, sadd, xadd and set of
  seckill.lua) and evalsha's time includes theirs, so the sum counts them
  twice; commandstats times are wall clock, so a process that waits for
  a core inside a command is charged for the wait;
- *CPU µs*: INFO cpu (user + system) of the process over the same window:
  commands plus the event loop, socket reads and writes, replication to the
  replica, the cluster bus; *outside* is CPU − commands;
- *round trips*, *depth*: the server's round trips to the node per order
  and the commands each carried (its /metrics);
- *repl. bytes*: bytes sent to the replica per order;
- *bus messages*: cluster bus messages sent and received (CLUSTER INFO)
  per 1000 orders.

The machine is shared: other processes' commands on the same Redis count
too (small beside tens of thousands of orders). async-lua-replica is the
same run on a Redis with a replica (Sentinel's master), the partner of a
cluster master, which has one too.

## Per run

| run | orders | window s | server CPU µs/order | Redis commands µs/order (masters) | Redis CPU µs/order (masters) | outside commands | ÷ one Redis (commands) | ÷ one Redis (CPU) | ÷ one Redis with a replica (CPU) | replicas' CPU µs/order | busiest master CPU µs/order | its core's cap ÷ one Redis's |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
`, b.info["end"], b.info["nproc"], b.info["cpu"], b.info["load_before"], b.info["load_after"], b.cfg.Duration, b.cfg.Conns, b.clusterLock(),
		dash(b.cfg.Only), clusterBuckets(), b.cfg.Duration)
	one := b.costByName("async-" + b.clusterLock())
	rep := b.costByName("async-" + b.clusterLock() + "-replica")
	ratio := func(x float64, r *costRun, cpu bool) string {
		if r == nil {
			return "-"
		}
		c, p, _, _ := costSums(r)
		d := c
		if cpu {
			d = p
		}
		if d <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x/d)
	}
	for _, r := range b.costs {
		c, p, reps, busiest := costSums(r)
		capRatio := "-"
		if one != nil {
			if _, op, _, _ := costSums(one); busiest > 0 {
				capRatio = fmt.Sprintf("%.2f", op/busiest)
			}
		}
		fmt.Fprintf(&w, "| %s | %.0f | %.1f | %s | %.1f | %.1f | %.1f | %s | %s | %s | %.1f | %.1f | %s |\n",
			r.Name, r.Orders, r.Seconds, dash(b.get(r.Name, "cpu_server_order")), c, p, p-c,
			ratio(c, one, false), ratio(p, one, true), ratio(p, rep, true), reps, busiest, capRatio)
	}
	w.WriteString(`
## Per node

| run | node | role | round trips/order | depth | commands µs/order | CPU µs/order | outside commands | repl. bytes/order | bytes in/order | bus messages/1000 orders |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
`)
	for _, r := range b.costs {
		for _, n := range r.Nodes {
			fmt.Fprintf(&w, "| %s | %s | %s | %.2f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.1f |\n",
				r.Name, n.Addr, n.Role, n.RoundTrips, n.Depth, n.CommandUs, n.CPUUs, n.CPUUs-n.CommandUs, n.ReplBytes, n.InBytes, n.BusMsgs)
		}
	}
	w.WriteString(`
## Per command (masters, summed over the nodes; at least 0.01 calls or 0.05 µs per order)

| run | command | calls/order | µs/call | µs/order |
|---|---|---:|---:|---:|
`)
	for _, r := range b.costs {
		sum := map[string]*cmdStat{}
		var names []string
		for _, n := range r.Nodes {
			if n.Role == "replica" {
				continue
			}
			for _, c := range n.Commands {
				if sum[c.Name] == nil {
					sum[c.Name] = &cmdStat{}
					names = append(names, c.Name)
				}
				sum[c.Name].Calls += c.Calls
				sum[c.Name].Usec += c.Usec
			}
		}
		sort.Slice(names, func(i, j int) bool { return sum[names[i]].Usec > sum[names[j]].Usec })
		for _, name := range names {
			s := sum[name]
			if s.Calls < 0.01 && s.Usec < 0.05 {
				continue
			}
			fmt.Fprintf(&w, "| %s | %s | %.3f | %.2f | %.2f |\n", r.Name, name, s.Calls, s.Usec/s.Calls, s.Usec)
		}
	}
	w.WriteString(b.mastersMarkdown(one, rep))
	return w.String()
}
