package app

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestOneNodeRedlockWarns: redsync and multi on one Redis node (no
// SECKILL_REDLOCK_ADDRS, or one address) log a warning at start that
// names SECKILL_REDLOCK_ADDRS; with three nodes, or in another mode, no
// such line.
func TestOneNodeRedlockWarns(t *testing.T) {
	three := os.Getenv("SECKILL_REDLOCK_ADDRS")
	one, _, _ := strings.Cut(three, ",")
	tests := []struct {
		name, mode, addrs string
		warn              bool
	}{
		{"redsync-embedded", "redsync", "", true},
		{"multi-embedded", "multi", "", true},
		{"lua-embedded", "lua", "", false},
		{"redsync-one-address", "redsync", one, true},
		{"redsync-three", "redsync", three, false},
		{"multi-three", "multi", three, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The cases with nodes need the three Redlock nodes of .ci/env.sh.
			if strings.Contains(tt.name, "-one-") && one == "" || strings.HasSuffix(tt.name, "-three") && strings.Count(three, ",") < 2 {
				t.Skip("SECKILL_REDLOCK_ADDRS (three nodes) not set")
			}
			cfg := embeddedConfig(t, map[string]string{"SECKILL_LOCK_MODE": tt.mode, "SECKILL_REDLOCK_ADDRS": tt.addrs})
			var buf syncBuffer
			a, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(&buf, nil)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			a.Close()
			var warning string
			for l := range strings.Lines(buf.String()) {
				if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "proves nothing") {
					warning = l
				}
			}
			if !tt.warn {
				if warning != "" {
					t.Errorf("%s on %q: warned %s", tt.mode, tt.addrs, warning)
				}
				return
			}
			name := map[string]string{"redsync": "Redlock", "multi": "MultiLock"}[tt.mode]
			for _, want := range []string{"SECKILL_LOCK_MODE=" + tt.mode + " on one Redis node", name + " on one node proves nothing", "SECKILL_REDLOCK_ADDRS"} {
				if !strings.Contains(warning, want) {
					t.Errorf("%s on one node: the warning %q lacks %q (log:\n%s)", tt.mode, warning, want, buf.String())
				}
			}
		})
	}
}
