package bench

import (
	"strings"
	"testing"
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
