package middleware

import (
	"testing"
	"time"
)

func TestRateLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRateLimiter(2, func() time.Time { return now })
	tests := []struct {
		user    int64
		advance time.Duration
		want    bool
	}{
		{1, 0, true},
		{1, 0, true},
		{1, 0, false}, // third in the same second
		{2, 0, true},  // other users count apart
		{1, time.Second, true},
		{1, 0, true},
		{1, 0, false},
	}
	for i, tt := range tests {
		now = now.Add(tt.advance)
		if got := r.Allow(tt.user); got != tt.want {
			t.Errorf("step %d (user %d): got %v, want %v", i, tt.user, got, tt.want)
		}
	}
	unlimited := NewRateLimiter(0, time.Now)
	for i := 0; i < 100; i++ {
		if !unlimited.Allow(1) {
			t.Fatal("limit 0: got a refusal, want no limit")
		}
	}
}
