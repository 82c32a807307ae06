package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestParseEntryTraceParent: an entry's traceparent is read. An entry
// without one (untraced, or written before tracing existed) parses as
// before.
func TestParseEntryTraceParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"traced", map[string]any{"orderId": "5", "userId": "6", "voucherId": "7", "traceparent": tp}, tp},
		{"untraced", map[string]any{"orderId": "5", "userId": "6", "voucherId": "7"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := parseEntry(2, redis.XMessage{ID: "1-0", Values: tt.values})
			if q.Malformed != "" || q.OrderID != 5 || q.UserID != 6 || q.VoucherID != 7 || q.TraceParent != tt.want {
				t.Errorf("got %+v, want order 5 of user 6 for voucher 7, traceparent %q", q, tt.want)
			}
		})
	}
}
