package repository

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"seckill/model"
)

// TestRedisErrConnectionLost: a connection closed in the middle of a reply
// is Redis unavailable (503), not an internal error (500).
func TestRedisErrConnectionLost(t *testing.T) {
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, fmt.Errorf("read: %w", io.EOF)} {
		if got := redisErr(err); !errors.Is(got, model.ErrUnavailable) {
			t.Errorf("redisErr(%v): got %v, want ErrUnavailable", err, got)
		}
	}
}
