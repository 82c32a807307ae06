package config

import (
	"slices"
	"testing"
)

// TestUndeclared: a SECKILL_* variable no setting reads (a retired name,
// a typo) is named; declared settings, other variables and the tests' own
// SECKILL_TEST_* are not.
func TestUndeclared(t *testing.T) {
	environ := []string{
		"SECKILL_AUTO_REBUILD_AFTER=5s", // retired: SECKILL_AUTO_REBUILD replaced it
		"SECKILL_LOCKMODE=redsync",      // a typo of SECKILL_LOCK_MODE
		"SECKILL_LOCK_MODE=lua",
		"SECKILL_AUTO_REBUILD=on",
		"SECKILL_TEST_CLUSTER_ADDRS=127.0.0.1:7001",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
		"PATH=/usr/bin",
		"SECKILL_LOCKMODE=again",
		"SECKILL_NOEQUALS",
	}
	got := Undeclared(environ)
	want := []string{"SECKILL_AUTO_REBUILD_AFTER", "SECKILL_LOCKMODE", "SECKILL_NOEQUALS"}
	if !slices.Equal(got, want) {
		t.Fatalf("Undeclared = %q, want %q", got, want)
	}
	var all []string
	for _, s := range settings {
		all = append(all, s.Name+"=x")
	}
	if got := Undeclared(all); len(got) != 0 {
		t.Errorf("declared settings reported as undeclared: %q", got)
	}
}
