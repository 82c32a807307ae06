package testenv

import (
	"runtime"
	"testing"
	"time"
)

// recorder is a testing.TB that records a skip or a failure. Both end the
// goroutine, as testing's do.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

// TestNeed: a set variable is returned; an empty one skips, or fails under
// CI=true.
func TestNeed(t *testing.T) {
	const name = "SECKILL_TESTENV_PROBE"
	tests := []struct {
		value, ci             string
		wantSkipped, wantFail bool
	}{
		{"x", "true", false, false},
		{"", "", true, false},
		{"", "true", false, true},
	}
	for _, tt := range tests {
		t.Setenv(name, tt.value)
		t.Setenv("CI", tt.ci)
		r := &recorder{TB: t}
		var got string
		done := make(chan struct{})
		go func() {
			defer close(done)
			got = Need(r, name)
		}()
		<-done
		if got != tt.value || r.skipped != tt.wantSkipped || r.failed != tt.wantFail {
			t.Errorf("%q with CI=%q: got %q, skipped %v, failed %v; want %q, %v, %v",
				tt.value, tt.ci, got, r.skipped, r.failed, tt.value, tt.wantSkipped, tt.wantFail)
		}
	}
}

// TestEach: f runs once per backend, in a subtest named by its key.
func TestEach(t *testing.T) {
	got := map[string]int{}
	Each(t, map[string]int{"a": 1, "b": 2}, func(t *testing.T, b int) {
		got[t.Name()] = b
	})
	if len(got) != 2 || got["TestEach/a"] != 1 || got["TestEach/b"] != 2 {
		t.Errorf("got %v, want TestEach/a=1 and TestEach/b=2", got)
	}
}

// TestClock: Now reads the time given, then where Set and Add moved it.
func TestClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	c.Add(time.Minute)
	if got := c.Now(); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("after Add: got %v, want %v", got, start.Add(time.Minute))
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("after Set: got %v, want %v", got, start)
	}
}
