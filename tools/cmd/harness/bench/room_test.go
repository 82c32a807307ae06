package bench

import (
	"testing"
)

// TestBenchRoomSection: the waiting room's runs are compared with the
// no-op endpoint (join, poll) and with today's purchase (the admitted
// purchase); in the seckill table the join and the poll have no slap ratio.
func TestBenchRoomSection(t *testing.T) {
	b := fixedBench()
	if got := (reporter{b}).roomSection(); got != "" {
		t.Errorf("without the room's runs the section is %q, want none", got)
	}
	b.runs["sync-lua-room-join"] = benchFigures{"requests": "40000", "rps": "20896.0", "p50_us": "1500", "p99_us": "9000", "status_200": "40000", "received": "40000"}
	b.runs["sync-lua-room-poll"] = benchFigures{"requests": "30000", "rps": "15672.0", "p50_us": "2000", "p99_us": "8000", "status_200": "30000", "received": "30000"}
	b.runs["sync-lua-room-buy"] = benchFigures{"requests": "11000", "rps": "1105.9", "p50_us": "25000", "p99_us": "70000", "status_200": "11000", "orders": "11000"}
	b.rows = append(b.rows, "sync-lua-room-join", "sync-lua-room-poll", "sync-lua-room-buy")
	md := b.render(b.targets(), func(string) string { return "" })
	mdHolds(t, md,
		"## The waiting room's cost",
		"| sync-lua-room-join | 20896 | 1.50 | 9.00 | no-op (52241 req/s) | 0.40 |\n",
		"| sync-lua-room-poll | 15672 | 2.00 | 8.00 | no-op (52241 req/s) | 0.30 |\n",
		"| sync-lua-room-buy | 1106 | 25.00 | 70.00 | sync-lua (1843 req/s) | 0.60 |\n",
		"| sync-lua-room-join | sync | lua | 40000 | 20896 | 1.50 | 9.00 | 40000 | 0 |  |  | ok | - | 0.40 |",
		"| sync-lua-room-buy | sync | lua | 11000 | 1106 | 25.00 | 70.00 | 11000 | 0 | 11000 |  | ok | 0.23 | 0.02 |",
	)
	if om, lm := runModes("sync-lua-room-poll"); om != "sync" || lm != "lua" {
		t.Errorf("runModes(sync-lua-room-poll) = %s, %s; want sync, lua", om, lm)
	}
}
