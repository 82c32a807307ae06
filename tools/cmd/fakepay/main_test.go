package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMaxDuration: the fake writes its env file and stops by itself
// after -max-duration; it refuses to start without -keys.
func TestMaxDuration(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "fakepay.env")
	var out, errs strings.Builder
	began := time.Now()
	code := run(context.Background(), []string{"-keys", filepath.Join(dir, "keys"), "-env-file", envFile, "-max-duration", "1s"}, &out, &errs)
	if code != 0 || time.Since(began) > 30*time.Second {
		t.Fatalf("exit %d after %s; stdout %q stderr %q", code, time.Since(began), out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "stopped: context deadline exceeded") {
		t.Errorf("stdout %q: want it stopped by the deadline", out.String())
	}
	b, err := os.ReadFile(envFile)
	if err != nil || !strings.Contains(string(b), "SECKILL_ALIPAY_GATEWAY=http://127.0.0.1:") {
		t.Errorf("env file: %q %v", b, err)
	}
	if code := run(context.Background(), nil, &out, &errs); code != 2 {
		t.Errorf("without -keys: exit %d, want 2", code)
	}
}
