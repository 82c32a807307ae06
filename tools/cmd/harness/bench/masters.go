package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/repository"
	"seckill/repository/redisstore"
)

// The cluster runs' work per master. Each run's voucher has N buckets. The
// key layout puts bucket b in shard BucketShard(v, b); the cluster's slot
// ownership (CLUSTER SLOTS) puts each shard on a master. COMMANDS.md shows
// how many buckets each master holds beside the CPU each spent. So the
// spread between the masters reads against the placement. It also shows
// each master's commands, and what capacity the masters' work would give
// if it were spread evenly.

// BucketsPerNode counts the voucher's buckets on each of addrs. The
// voucher has n buckets; slots is the cluster's CLUSTER SLOTS. A bucket
// counts for the master that serves its shard's slot. Addresses not in
// addrs (and slots no master serves) count nowhere.
func BucketsPerNode(slots []redis.ClusterSlot, addrs []string, voucherID int64, n int) []int {
	out := make([]int, len(addrs))
	for b := 0; b < n; b++ {
		slot := int(repository.Slot(redisstore.ShardTag(redisstore.BucketShard(voucherID, b))))
		for _, s := range slots {
			if slot < s.Start || slot > s.End || len(s.Nodes) == 0 {
				continue
			}
			for i, a := range addrs {
				if a == s.Nodes[0].Addr {
					out[i]++
				}
			}
		}
	}
	return out
}

// spreadOf is the largest of xs over the smallest. ok is false with
// fewer than two or when the smallest is not positive.
func spreadOf(xs []float64) (float64, bool) {
	if len(xs) < 2 || slices.Min(xs) <= 0 {
		return 0, false
	}
	return slices.Max(xs) / slices.Min(xs), true
}

// placeCluster keeps the cluster run's voucher and its placement on the
// nodes with the run's figures (CLUSTER SLOTS of the cluster's client).
func (b costTables) placeCluster(name string, voucherID int64, buckets int) {
	r := b.costByName(name)
	cc, ok := b.rdb.(*redis.ClusterClient)
	if r == nil || !ok {
		return
	}
	slots, err := cc.ClusterSlots(b.ctx).Result()
	if err != nil {
		b.logf("%s: no placement: CLUSTER SLOTS: %v", name, err)
		return
	}
	var addrs []string
	for _, n := range r.Nodes {
		addrs = append(addrs, n.Addr)
	}
	r.Voucher, r.Buckets = voucherID, buckets
	r.Placement = BucketsPerNode(slots, addrs, voucherID, buckets)
	b.logf("%s: voucher %d (shard %d): its %d bucket(s) per node %v", name, voucherID,
		redisstore.VoucherShard(voucherID), buckets, r.Placement)
}

// mastersMarkdown is COMMANDS.md's sections of the cluster runs: the
// placement, the spread and the projected capacity, then each master's
// commands. one and rep are async-lua's and async-lua-replica's figures
// (nil when absent). "" when no cluster run was measured.
func (b costTables) mastersMarkdown(one, rep *costRun) string {
	var runs []*costRun
	for _, r := range b.costs {
		if len(r.Placement) > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return ""
	}
	var w strings.Builder
	w.WriteString(`
## Cluster runs: placement, spread and projected capacity

*buckets per master*: the voucher's buckets on each master (the key
layout's BucketShard and the cluster's CLUSTER SLOTS); with every bucket
taking the same share of the orders, the admissions divide the same way.
*spread*: the most ÷ the fewest, and the masters' CPU per order, busiest ÷
idlest. *cap*: what the masters would admit on a core each, ÷ what the one
Redis (or the one Redis with a replica) would on its core: the busiest
master's cap as measured (its CPU per order against the baseline's), and
the cap with the masters' summed CPU spread evenly (masters × baseline ÷
sum).

| run | voucher (shard) | buckets per master | buckets: most ÷ fewest | master CPU µs/order | CPU: busiest ÷ idlest | busiest's cap ÷ one Redis | ÷ one Redis with a replica | even spread's cap ÷ one Redis | ÷ one Redis with a replica |
|---|---|---|---:|---|---:|---:|---:|---:|---:|
`)
	base := func(r *costRun) float64 {
		if r == nil {
			return 0
		}
		_, cpu, _, _ := costSums(r)
		return cpu
	}
	ratio := func(x, y float64) string {
		if x <= 0 || y <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x/y)
	}
	for _, r := range runs {
		var places, cpus []float64
		var placeText, cpuText []string
		masters := 0
		for i, n := range r.Nodes {
			if n.Role != "master" {
				continue
			}
			masters++
			places = append(places, float64(r.Placement[i]))
			cpus = append(cpus, n.CPUUs)
			placeText = append(placeText, fmt.Sprint(r.Placement[i]))
			cpuText = append(cpuText, fmt.Sprintf("%.1f", n.CPUUs))
		}
		ps, cs := "-", "-"
		if x, ok := spreadOf(places); ok {
			ps = fmt.Sprintf("%.2f", x)
		}
		if x, ok := spreadOf(cpus); ok {
			cs = fmt.Sprintf("%.2f", x)
		}
		_, sum, _, busiest := costSums(r)
		m := float64(masters)
		fmt.Fprintf(&w, "| %s | %d (%d) | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, r.Voucher, redisstore.VoucherShard(r.Voucher), strings.Join(placeText, " / "), ps,
			strings.Join(cpuText, " / "), cs, ratio(base(one), busiest), ratio(base(rep), busiest),
			ratio(m*base(one), sum), ratio(m*base(rep), sum))
	}
	w.WriteString(`
## Per master and per command (cluster runs)

Each master's commands per admitted order (at least 0.01 calls or 0.05 µs
on one master), beside the one Redis with a replica's µs per call. evalsha
is seckill.lua; its time includes the commands it calls, which count again
on their own lines.
`)
	repCalls := map[string]cmdStat{}
	if rep != nil {
		for _, n := range rep.Nodes {
			if n.Role == "replica" {
				continue
			}
			for _, c := range n.Commands {
				repCalls[c.Name] = cmdStat{Calls: c.Calls, Usec: c.UsecPerCall}
			}
		}
	}
	for _, r := range runs {
		var masters []costNodeResult
		var head, rule []string
		for i, n := range r.Nodes {
			if n.Role != "master" {
				continue
			}
			masters = append(masters, n)
			port := n.Addr[strings.LastIndex(n.Addr, ":")+1:]
			head = append(head, fmt.Sprintf("%s (%d buckets): calls/order | µs/call | µs/order", port, r.Placement[i]))
			rule = append(rule, "---:|---:|---:")
		}
		fmt.Fprintf(&w, "\n### %s\n\n| command | %s | masters µs/order | one Redis with a replica µs/call |\n|---|%s|---:|---:|\n",
			r.Name, strings.Join(head, " | "), strings.Join(rule, "|"))
		per := make([]map[string]costCmd, len(masters))
		total := map[string]float64{}
		for i, n := range masters {
			per[i] = map[string]costCmd{}
			for _, c := range n.Commands {
				per[i][c.Name] = c
				total[c.Name] += c.Usec
			}
		}
		var names []string
		for name := range total {
			keep := false
			for i := range masters {
				if c := per[i][name]; c.Calls >= 0.01 || c.Usec >= 0.05 {
					keep = true
				}
			}
			if keep {
				names = append(names, name)
			}
		}
		sort.Slice(names, func(i, j int) bool { return total[names[i]] > total[names[j]] })
		for _, name := range names {
			var cells []string
			for i := range masters {
				c, ok := per[i][name]
				if !ok {
					cells = append(cells, "- | - | -")
					continue
				}
				cells = append(cells, fmt.Sprintf("%.3f | %.2f | %.2f", c.Calls, c.UsecPerCall, c.Usec))
			}
			rc := "-"
			if c, ok := repCalls[name]; ok {
				rc = fmt.Sprintf("%.2f", c.Usec)
			}
			fmt.Fprintf(&w, "| %s | %s | %.2f | %s |\n", name, strings.Join(cells, " | "), total[name], rc)
		}
	}
	return w.String()
}
