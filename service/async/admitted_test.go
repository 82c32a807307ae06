package async

import (
	"testing"
	"time"

	"seckill/model"
)

// TestAdmittedAt: an async order's pay time starts at its admission; at
// the write when the admission is unknown or ahead of this clock.
func TestAdmittedAt(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		admitted time.Time
		want     time.Time
	}{
		{"admitted before", now.Add(-5 * time.Second), now.Add(-5 * time.Second)},
		{"unknown", time.Time{}, now},
		{"redis clock ahead", now.Add(time.Second), now},
	} {
		if got := admittedAt(model.QueuedOrder{Admitted: tt.admitted}, now); !got.Equal(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
