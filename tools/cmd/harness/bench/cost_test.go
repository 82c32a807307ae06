package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseNodeStats(t *testing.T) {
	text := strings.Join([]string{
		"# Commandstats",
		"cmdstat_evalsha:calls=300,usec=9000,usec_per_call=30.00,rejected_calls=0,failed_calls=0",
		"cmdstat_xreadgroup:calls=12,usec=600,usec_per_call=50.00,rejected_calls=0,failed_calls=0",
		"# CPU",
		"used_cpu_sys:1.500000",
		"used_cpu_user:2.250000",
		"# Stats",
		"total_net_input_bytes:1000",
		"total_net_output_bytes:2000",
		"total_net_repl_output_bytes:700",
	}, "\r\n")
	s := parseNodeStats(text)
	if got := s.Cmds["evalsha"]; got.Calls != 300 || got.Usec != 9000 {
		t.Errorf("evalsha: got %+v, want 300 calls, 9000 usec", got)
	}
	if got := s.Cmds["xreadgroup"]; got.Calls != 12 || got.Usec != 600 {
		t.Errorf("xreadgroup: got %+v, want 12 calls, 600 usec", got)
	}
	if s.CPU != 3.75 || s.NetIn != 1000 || s.NetOut != 2000 || s.ReplOut != 700 {
		t.Errorf("got CPU %v, in %v, out %v, repl %v; want 3.75, 1000, 2000, 700", s.CPU, s.NetIn, s.NetOut, s.ReplOut)
	}
}

func TestNodeRoundTrips(t *testing.T) {
	text := strings.Join([]string{
		"# HELP seckill_redis_round_trips_total Round trips.",
		`seckill_redis_round_trips_total{node="127.0.0.1:7001"} 40`,
		`seckill_redis_round_trips_total{node="127.0.0.1:7002"} 10`,
		`seckill_redis_commands_total{node="127.0.0.1:7001"} 400`,
		`seckill_redis_commands_total{node="127.0.0.1:7002"} 15`,
	}, "\n")
	trips, cmds := nodeRoundTrips(text)
	if trips["127.0.0.1:7001"] != 40 || trips["127.0.0.1:7002"] != 10 {
		t.Errorf("round trips: got %v", trips)
	}
	if cmds["127.0.0.1:7001"] != 400 || cmds["127.0.0.1:7002"] != 15 {
		t.Errorf("commands: got %v", cmds)
	}
}

func TestCostSums(t *testing.T) {
	r := &costRun{Nodes: []costNodeResult{
		{costNode: costNode{Role: "master"}, CommandUs: 10, CPUUs: 20},
		{costNode: costNode{Role: "master"}, CommandUs: 5, CPUUs: 30},
		{costNode: costNode{Role: "replica"}, CommandUs: 4, CPUUs: 8},
	}}
	cmd, cpu, replicas, busiest := costSums(r)
	if cmd != 15 || cpu != 50 || replicas != 8 || busiest != 30 {
		t.Errorf("got %v %v %v %v, want 15 50 8 30", cmd, cpu, replicas, busiest)
	}
}

// threeMasters is CLUSTER SLOTS of .ci/services.sh's cluster.
var threeMasters = []redis.ClusterSlot{
	{Start: 0, End: 5460, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7001"}, {Addr: "127.0.0.1:7006"}}},
	{Start: 5461, End: 10922, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7002"}, {Addr: "127.0.0.1:7004"}}},
	{Start: 10923, End: 16383, Nodes: []redis.ClusterNode{{Addr: "127.0.0.1:7003"}, {Addr: "127.0.0.1:7005"}}},
}

func TestBucketsPerNode(t *testing.T) {
	addrs := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"}
	for _, c := range []struct {
		voucher int64
		n       int
		want    []int
	}{
		{11, 8, []int{2, 3, 3, 0}}, // shards 11 6 1 12 7 2 13 8
		{3, 8, []int{4, 2, 2, 0}},  // shards 3 14 9 4 15 10 5 0: shards 0-5 are 7001's
		{16, 3, []int{1, 1, 1, 0}},
		{16, 16, []int{6, 5, 5, 0}},
	} {
		got := BucketsPerNode(threeMasters, addrs, c.voucher, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("voucher %d, %d buckets: got %v, want %v", c.voucher, c.n, got, c.want)
		}
	}
}

func TestMastersMarkdown(t *testing.T) {
	b := fixedBench()
	cmds := func(us float64) []costCmd { return []costCmd{{Name: "evalsha", Calls: 1, Usec: us, UsecPerCall: us}} }
	one := &costRun{Name: "async-lua", Nodes: []costNodeResult{{costNode: costNode{Role: "redis"}, CPUUs: 45}}}
	rep := &costRun{Name: "async-lua-replica", Nodes: []costNodeResult{
		{costNode: costNode{Role: "master"}, CPUUs: 60, Commands: cmds(33)}, {costNode: costNode{Role: "replica"}, CPUUs: 38}}}
	cl := &costRun{Name: "cluster-8", Voucher: 11, Buckets: 8, Placement: []int{2, 3, 3, 0}, Nodes: []costNodeResult{
		{costNode: costNode{Addr: "127.0.0.1:7001", Role: "master"}, CPUUs: 20, Commands: cmds(10)},
		{costNode: costNode{Addr: "127.0.0.1:7002", Role: "master"}, CPUUs: 25, Commands: cmds(16)},
		{costNode: costNode{Addr: "127.0.0.1:7003", Role: "master"}, CPUUs: 30, Commands: cmds(16)},
		{costNode: costNode{Addr: "127.0.0.1:7004", Role: "replica"}, CPUUs: 15},
	}}
	b.costs = []*costRun{one, rep, cl}
	md := b.mastersMarkdown(one, rep)
	mdHolds(t, md,
		// busiest 30: 45/30, 60/30; even: 3*45/75, 3*60/75
		"| cluster-8 | 11 (11) | 2 / 3 / 3 | 1.50 | 20.0 / 25.0 / 30.0 | 1.50 | 1.50 | 2.00 | 1.80 | 2.40 |\n",
		"| 7001 (2 buckets): calls/order | µs/call | µs/order | 7002 (3 buckets)",
		"| evalsha | 1.000 | 10.00 | 10.00 | 1.000 | 16.00 | 16.00 | 1.000 | 16.00 | 16.00 | 42.00 | 33.00 |\n")
	if got := busMessages("cluster_state:ok\r\ncluster_stats_messages_sent:120\r\ncluster_stats_messages_received:80\r\n"); got != 200 {
		t.Errorf("busMessages: got %v, want 200", got)
	}
}
