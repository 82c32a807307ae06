// Package testpair serializes the tests that use the Sentinel-managed
// primary/replica pair of .ci/services.sh across test processes. `go test
// ./...` runs packages in parallel. A test that forces a failover must not
// run while another stalls the replica or expects the roles to hold.
package testpair

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Lock holds an exclusive lock on the pair until the test ends. It is an
// flock on a file in the temporary directory. The kernel releases it if the
// test process dies.
func Lock(tb testing.TB) {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "seckill-sentinel-pair.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		tb.Fatalf("sentinel pair lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("sentinel pair lock: %v", err)
	}
	tb.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
