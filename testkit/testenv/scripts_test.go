package testenv

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestScriptCounter: a first Run (EVALSHA refused with NOSCRIPT, then EVAL)
// is one run in one trip, as is a second (EVALSHA alone). A pipeline of
// three EVALSHA is three runs in one trip. Other commands count nothing.
func TestScriptCounter(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	var h ScriptCounter
	rdb.AddHook(&h)
	s := redis.NewScript("return 1")
	check := func(what string, trips, scripts int64) {
		t.Helper()
		if gt, gs := h.Trips.Load(), h.Scripts.Load(); gt != trips || gs != scripts {
			t.Errorf("%s: got %d trips, %d scripts, want %d, %d", what, gt, gs, trips, scripts)
		}
	}
	if err := s.Run(ctx, rdb, nil).Err(); err != nil {
		t.Fatal(err)
	}
	check("first run", 1, 1)
	h.Reset()
	rdb.Set(ctx, "k", 1, 0)
	if err := s.Run(ctx, rdb, nil).Err(); err != nil {
		t.Fatal(err)
	}
	check("second run", 1, 1)
	h.Reset()
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 3 {
			s.EvalSha(ctx, p, nil)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("pipeline", 1, 3)
}
