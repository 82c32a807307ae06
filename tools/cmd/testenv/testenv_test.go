package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func names(todo []step) []string {
	var out []string
	for _, s := range todo {
		out = append(out, s.vars[0])
	}
	return out
}

// TestPlan: a set variable is used as it is (CI's .ci/env.sh sets them
// all: nothing starts); an unset one gets a private server when its
// programs are installed, and is named as skipped when one is not.
func TestPlan(t *testing.T) {
	ci := map[string]string{}
	for _, s := range steps {
		ci[s.vars[0]] = "set"
	}
	all := func(string) bool { return true }
	if todo, missing := plan(func(k string) string { return ci[k] }, all); len(todo) != 0 || len(missing) != 0 {
		t.Errorf("with every variable set: starts %v, misses %v, want nothing", names(todo), missing)
	}
	bare := func(string) string { return "" }
	todo, missing := plan(bare, all)
	want := []string{"SECKILL_MYSQL_DSN", "SECKILL_REDIS_ADDR", "SECKILL_REDLOCK_ADDRS", "SECKILL_TEST_SENTINEL_ADDRS", "SECKILL_TEST_CLUSTER_ADDRS"}
	if got := names(todo); !slices.Equal(got, want) || len(missing) != 0 {
		t.Errorf("bare machine with everything installed: starts %v, misses %v, want %v", got, missing, want)
	}
	onlyRedis := func(p string) bool { return p == "redis-server" }
	todo, missing = plan(func(k string) string { return map[string]string{"SECKILL_REDIS_ADDR": "set"}[k] }, onlyRedis)
	if got := names(todo); !slices.Equal(got, []string{"SECKILL_REDLOCK_ADDRS"}) {
		t.Errorf("Redis set, only redis-server installed: starts %v, want the Redlock nodes only", got)
	}
	if len(missing) != 3 || !strings.Contains(missing[0], "mariadbd") || !strings.Contains(missing[0], "SECKILL_MYSQL_DSN stays unset") {
		t.Errorf("missing %q, want MariaDB, Sentinel and Cluster named with what they lack", missing)
	}
}

// TestRunStartsRedis: with SECKILL_REDIS_ADDR unset (and the rest set),
// the command runs with it pointing at a private redis-server that
// answers, and the server is gone once the command ended.
func TestRunStartsRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil || !installed("redis-server") {
		t.Skip("redis-server and redis-cli not installed")
	}
	for _, s := range steps[2:] {
		for _, v := range s.vars {
			t.Setenv(v, "set-by-the-test")
		}
	}
	t.Setenv("SECKILL_MYSQL_DSN", "set-by-the-test")
	t.Setenv("SECKILL_REDIS_ADDR", "")
	os.Unsetenv("SECKILL_REDIS_ADDR")
	out := filepath.Join(t.TempDir(), "out")
	script := `echo "$SECKILL_REDIS_ADDR" > ` + out + `; redis-cli -h 127.0.0.1 -p "${SECKILL_REDIS_ADDR##*:}" ping >> ` + out
	var log strings.Builder
	if code := run(context.Background(), []string{"sh", "-c", script}, &log); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "127.0.0.1:") || lines[1] != "PONG" {
		t.Fatalf("the command saw %q, want a loopback address that answers PONG; log:\n%s", b, log.String())
	}
	if !strings.Contains(log.String(), "SECKILL_REDIS_ADDR="+lines[0]) {
		t.Errorf("log %q does not name the private server", log.String())
	}
	if err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strings.TrimPrefix(lines[0], "127.0.0.1:"), "ping").Run(); err == nil {
		t.Errorf("the private Redis %s still answers after the command ended", lines[0])
	}
}
