package stampede

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	tests := []struct {
		p    int
		want time.Duration
	}{{50, 5}, {99, 10}, {1, 1}, {90, 9}}
	for _, tt := range tests {
		if got := percentile(d, tt.p); got != tt.want {
			t.Errorf("p%d: got %d, want %d", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing: got %d, want 0", got)
	}
}

func TestConfigBounds(t *testing.T) {
	t.Setenv("STAMPEDE_CONNS", "50000")
	if _, err := configFromEnv("/r", time.Now()); err == nil {
		t.Error("STAMPEDE_CONNS=50000: got no error, want one (bounded)")
	}
	t.Setenv("STAMPEDE_CONNS", "5000")
	t.Setenv("STAMPEDE_MODES", "sync fast")
	if _, err := configFromEnv("/r", time.Now()); err == nil {
		t.Error("STAMPEDE_MODES=sync fast: got no error, want one")
	}
	t.Setenv("STAMPEDE_MODES", "")
	c, err := configFromEnv("/r", time.Now())
	if err != nil || c.Conns != 5000 || c.LimitConns != 64 || len(c.Modes) != 2 || !c.RetryAfter {
		t.Errorf("defaults: got %+v, %v", c, err)
	}
}
