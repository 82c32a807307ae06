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

// TestRedisErrClusterUnavailable: the errors a cluster answers while a slot
// has no master or moves (seen as 500s in the cluster-async fault case
// before) are Redis unavailable (503); other Redis errors are not.
func TestRedisErrClusterUnavailable(t *testing.T) {
	for _, msg := range []string{"CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot",
		"LOADING Redis is loading the dataset in memory", "MASTERDOWN Link with MASTER is down", "READONLY You can't write against a read only replica."} {
		if got := redisErr(replyErr(msg)); !errors.Is(got, model.ErrUnavailable) {
			t.Errorf("redisErr(%q): got %v, want ErrUnavailable", msg, got)
		}
	}
	if got := redisErr(replyErr("ERR wrong number of arguments")); errors.Is(got, model.ErrUnavailable) {
		t.Errorf("a script error: got %v, want not ErrUnavailable", got)
	}
}

// replyErr is an error reply of a Redis server (redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
