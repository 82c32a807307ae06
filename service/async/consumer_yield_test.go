package async

import (
	"testing"
	"time"
)

// TestConsumerYieldPause: after a full batch, a consumer pauses only while its
// process admits orders. The pause is (1-DutyCycle)/DutyCycle of the batch's
// time, at most yieldMax. With DutyCycle 1 or no admission counter it never
// pauses.
func TestConsumerYieldPause(t *testing.T) {
	var admitted uint64
	counter := func() uint64 { return admitted }
	c := func(duty float64, count func() uint64) *consumer {
		cfg := ConsumerConfig{DutyCycle: duty}
		cfg.defaults()
		return &consumer{ConsumerGroup: &ConsumerGroup{d: ConsumerDeps{Admitted: count}, cfg: cfg}}
	}
	quarter := c(0.25, counter)
	admitted = 10
	if got := quarter.yieldPause(10 * time.Millisecond); got != 30*time.Millisecond {
		t.Errorf("duty 0.25, admissions since: got %v, want 30ms", got)
	}
	if got := quarter.yieldPause(10 * time.Millisecond); got != 0 {
		t.Errorf("duty 0.25, no admission since the last batch: got %v, want 0", got)
	}
	admitted++
	if got := quarter.yieldPause(time.Second); got != yieldMax {
		t.Errorf("a long batch: got %v, want the cap %v", got, yieldMax)
	}
	admitted++
	if got := c(1, counter).yieldPause(10 * time.Millisecond); got != 0 {
		t.Errorf("duty 1: got %v, want 0", got)
	}
	admitted++
	if got := c(0, counter).yieldPause(10 * time.Millisecond); got != 30*time.Millisecond {
		t.Errorf("duty unset (default DefaultDuty, 0.25): got %v, want 30ms", got)
	}
	admitted++
	if got := c(4, counter).yieldPause(10 * time.Millisecond); got != 0 {
		t.Errorf("duty above 1 (taken as 1): got %v, want 0", got)
	}
	if got := c(0.25, nil).yieldPause(10 * time.Millisecond); got != 0 {
		t.Errorf("no admission counter: got %v, want 0", got)
	}
}
