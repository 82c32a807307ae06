package redisstore

import (
	"context"
	"strings"
	"testing"

	"seckill/testkit/testenv"
)

// TestIdentity: the run id of the answering Redis (40 hex characters, the
// same on a second read) and the epoch stored there.
func TestIdentity(t *testing.T) {
	addr := testenv.Need(t, "SECKILL_REDIS_ADDR")
	rdb := NewRedisClient(addr, RedisAuth{})
	defer rdb.Close()
	ctx := context.Background()
	a := NewAsyncState(rdb)
	id, err := a.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(id.RunID) != 40 || strings.Trim(id.RunID, "0123456789abcdef") != "" {
		t.Errorf("run id %q, want 40 hex characters", id.RunID)
	}
	epoch, err := a.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Identity(ctx)
	if err != nil || again.RunID != id.RunID || again.Epoch != epoch {
		t.Errorf("second read: got %+v, %v, want run id %s and epoch %q", again, err, id.RunID, epoch)
	}
}
