package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore"
	"seckill/tools/cmd/harness/testbed"
)

// The Redis Cluster block of `harness bench`. It runs async admission (lua)
// on the cluster of SECKILL_TEST_CLUSTER_ADDRS. .ci/services.sh starts three
// masters with a replica each. The voucher's stock is in N buckets for each N
// of BENCH_CLUSTER_BUCKETS [1 2 4 6 8]. The async-lua run on one Redis
// stands beside them. Six buckets split evenly over three masters for
// most voucher ids; eight cannot (docs/benchmark.md, "A hot voucher over
// three masters").
//
// Each run starts a fresh server on the cluster. It publishes a fresh voucher
// with stockBuckets N. Then come the wrk admission of async-lua, the drain
// and the audit. The harness's Redis client is the cluster's for the block.
//
// The CPU of every cluster node is read from /proc over the wrk run. INFO
// server gives each process_id. The CPU is kept per admitted order, and
// summed as the run's Redis CPU. Empty BENCH_CLUSTER_BUCKETS or no
// SECKILL_TEST_CLUSTER_ADDRS: no block.

// clusterNode is one node of the cluster the bench measures.
type clusterNode struct {
	Addr, Role string
	PID        int
}

// JSONNode is a node of results.json's clusterNodes (masters first):
// the figure cpu_node<i>_order of a cluster run is clusterNodes[i]'s.
type JSONNode struct {
	Addr string `json:"addr"`
	Role string `json:"role"` // master or replica
}

// CoreRate projects admissions/s for a Redis process with a core of its own.
// The process spends us µs of CPU per admitted order. The rate is 1e6 ÷ us,
// to hundreds, and us has one decimal. It is 0 when us is not positive.
// RESULTS.md and docs/bench-cluster.svg project with it.
func CoreRate(us float64) float64 {
	if us <= 0 {
		return 0
	}
	return math.Round(1e6/us/100) * 100
}

// coreRateText is coreRate of a figure (µs per order) as RESULTS.md shows it.
// It is "-" when the figure is not a positive number.
func coreRateText(us string) string {
	r := CoreRate(figNum0(us))
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", r)
}

// BusiestMaster is the master that spent the most CPU per admitted order in a
// run. It returns the master's index among the nodes and its µs. The roles
// are in clusterNodes order. us gives node i's figure (ok false when absent).
// ok is false when no master has one.
func BusiestMaster(roles []string, us func(node int) (float64, bool)) (node int, v float64, ok bool) {
	node = -1
	for i, role := range roles {
		x, has := us(i)
		if role != "master" || !has {
			continue
		}
		if node < 0 || x > v {
			node, v = i, x
		}
	}
	return node, v, node >= 0
}

// clusterRuns runs the block. The run names are cluster-<N>.
func (b costTables) clusterRuns() {
	addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	set := strings.Fields(clusterBuckets())
	if addrs == "" || len(set) == 0 || !b.cfg.wantAsync() {
		return
	}
	cc := redisstore.NewClusterRedisClient(strings.Split(addrs, ","), redisstore.RedisAuth{})
	defer cc.Close()
	nodes, err := b.clusterNodes(cc)
	if err != nil {
		b.logf("no cluster block: %v", err)
		return
	}
	b.clusterNodes_ = nodes
	single, singlePIDs, singleNodes := b.rdb, b.nodePIDs, b.costNodes
	defer func() { b.rdb, b.nodePIDs, b.costNodes = single, singlePIDs, singleNodes }()
	b.rdb = cc
	b.nodePIDs, b.costNodes = nil, nil
	for _, n := range nodes {
		b.nodePIDs = append(b.nodePIDs, n.PID)
		b.costNodes = append(b.costNodes, costNode{Addr: n.Addr, Role: n.Role})
	}
	for _, s := range set {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > redisstore.MaxBuckets {
			b.die("BENCH_CLUSTER_BUCKETS: %q is not a number from 1 to %d", s, redisstore.MaxBuckets)
		}
		name := fmt.Sprintf("cluster-%d", n)
		b.attempt(name, func() { b.clusterRun(name, n, addrs) })
		b.clusterRows = append(b.clusterRows, name)
	}
}

// clusterBuckets is BENCH_CLUSTER_BUCKETS, the block's bucket counts.
func clusterBuckets() string { return testbed.EnvOr("BENCH_CLUSTER_BUCKETS", "1 2 4 6 8") }

// clusterRun is one run of the block.
func (b costTables) clusterRun(name string, buckets int, addrs string) {
	lm := b.clusterLock()
	b.logf("seckill %s (async, %s, Redis Cluster, %d bucket(s))", name, lm, buckets)
	b.startServer("async", lm, name, "SECKILL_REDIS_ADDR=", "SECKILL_REDIS_CLUSTER_ADDRS="+addrs)
	v := b.publishWith(10000000, fmt.Sprintf(`,"stockBuckets":%d`, buckets))
	b.put(name, "buckets", strconv.Itoa(buckets))
	b.costBegin(name)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", filepath.Join(b.cfg.Out, "tokens-async.csv"))
	b.drain(name, v)
	b.costEnd(name)
	b.placeCluster(name, v, buckets)
	b.serverMetrics(name, "")
	b.asyncChecks(name, v)
}

// clusterNodes lists the cluster's nodes (CLUSTER NODES of a seed) with
// their roles and process ids, masters first.
func (b costTables) clusterNodes(cc *redis.ClusterClient) ([]clusterNode, error) {
	text, err := cc.ClusterNodes(b.ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		role := "replica"
		if strings.Contains(f[2], "master") {
			role = "master"
		}
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(b.ctx, "server").Result()
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("INFO server of %s: %w", addr, err)
		}
		pid, _ := strconv.Atoi(infoField(info, "process_id"))
		out = append(out, clusterNode{Addr: addr, Role: role, PID: pid})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role == "master"
		}
		return out[i].Addr < out[j].Addr
	})
	return out, nil
}

// nodeOrderCPU puts, for a run with cluster nodes, each node's CPU per
// admitted order (cpu_node<i>_order, µs) from two samples.
func (b costTables) nodeOrderCPU(name string, m0, m1 cpuSample) {
	n := figNum0(b.get(name, "status_200"))
	if n <= 0 || len(m1.Nodes) == 0 || len(m0.Nodes) != len(m1.Nodes) {
		return
	}
	var parts []string
	for i := range m1.Nodes {
		us := (m1.Nodes[i] - m0.Nodes[i]) / b.hz * 1e6 / n
		b.put(name, fmt.Sprintf("cpu_node%d_order", i), fmt.Sprintf("%.1f", us))
		parts = append(parts, fmt.Sprintf("%.1f", us))
	}
	b.logf("%s: CPU per admitted order of each cluster node (masters first): %s us", name, strings.Join(parts, " / "))
}

// clusterSection is RESULTS.md's section of the block ("" without it).
func (b costTables) clusterSection() string {
	if len(b.clusterRows) == 0 {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, `
## Redis Cluster: async admission by stock buckets

The async-lua admission again on the Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS
(%d nodes: masters first), the voucher's stock split in N buckets (each on a
slot of its own, docs/async.md "Stock buckets"). "÷ one Redis" is the run's
req/s ÷ async-lua's. The nodes' CPU is per admitted order, from /proc over
the wrk run. All processes share this machine's cores; "busiest master on
a core" projects what one core per master would give: 1e6 ÷ the µs per
order of the master that spent the most (one Redis, async-lua: %s us,
%s/s).

| run | buckets | req/s | ÷ one Redis | p99 ms | 200 | orders (DB) | invariants | CPU us/order server | CPU us/order Redis, summed | per node (%s) | busiest master on a core, orders/s |
|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|
`, len(b.clusterNodes_), dash(b.get("async-lua", "cpu_redis_order")), coreRateText(b.get("async-lua", "cpu_redis_order")), b.nodeLabels())
	g := b.get
	var roles []string
	for _, n := range b.clusterNodes_ {
		roles = append(roles, n.Role)
	}
	for _, name := range b.clusterRows {
		var per []string
		for i := range b.clusterNodes_ {
			per = append(per, g(name, fmt.Sprintf("cpu_node%d_order", i)))
		}
		inv := "ok"
		for _, v := range b.violations {
			if strings.HasPrefix(v, name+":") {
				inv = "**violation**"
			}
		}
		busiest := "-"
		if n, _, ok := BusiestMaster(roles, func(i int) (float64, bool) { return figNum(per[i]) }); ok {
			busiest = coreRateText(per[n])
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			name, g(name, "buckets"), fmtRate(g(name, "rps")), benchRatio(g(name, "rps"), g("async-lua", "rps")),
			benchMS(g(name, "p99_us")), g(name, "status_200"), g(name, "orders"), inv,
			g(name, "cpu_server_order"), g(name, "cpu_redis_order"), strings.Join(per, " / "), busiest)
	}
	return w.String()
}

// nodeLabels names the nodes in table order: port:role.
func (b costTables) nodeLabels() string {
	var out []string
	for _, n := range b.clusterNodes_ {
		_, port, _ := strings.Cut(n.Addr, ":")
		out = append(out, port+" "+n.Role)
	}
	return strings.Join(out, " / ")
}
