package live

import (
	"testing"
	"time"
)

// TestRecorderBounded: no more than MaxVouchers vouchers are counted. The
// answers of others are dropped and counted as dropped.
func TestRecorderBounded(t *testing.T) {
	rec := NewRecorder()
	for id := int64(1); id <= MaxVouchers+10; id++ {
		rec.Observe(id, "OK", NotDuplicate, time.Millisecond)
	}
	if n := rec.n.Load(); n != MaxVouchers {
		t.Errorf("vouchers counted: got %d, want %d", n, MaxVouchers)
	}
	if got := rec.Dropped(); got != 10 {
		t.Errorf("dropped: got %d, want 10", got)
	}
}
