package apptest

import (
	"context"
	"os"
	"testing"
	"time"

	"seckill/testkit/redisproc"
)

// PrivateRedis starts a throwaway redis-server with o (Dir filled in) and
// stops it when the test ends. Without redis-server it skips the test, and
// fails it when CI=true.
func PrivateRedis(t *testing.T, o redisproc.Options) *redisproc.Server {
	t.Helper()
	if err := redisproc.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true requires redis-server: %v", err)
		}
		t.Skipf("redis-server missing: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	o.Dir = t.TempDir()
	s, err := redisproc.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
