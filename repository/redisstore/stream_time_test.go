package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestParseEntryAdmitted: an entry's admission time is its id's
// milliseconds. An id without them gives the zero time.
func TestParseEntryAdmitted(t *testing.T) {
	values := map[string]any{"orderId": "7", "userId": "8", "voucherId": "9"}
	q := parseEntry(0, redis.XMessage{ID: "1764126000123-4", Values: values})
	if want := time.UnixMilli(1764126000123); !q.Admitted.Equal(want) {
		t.Errorf("admitted %v, want %v", q.Admitted, want)
	}
	for _, id := range []string{"", "x-1", "0-1", "-1", "17"} {
		if got := entryTime(id); !got.IsZero() {
			t.Errorf("entryTime(%q) = %v, want zero", id, got)
		}
	}
}
