package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"seckill/tools/internal/fakepay"
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
	want := []string{"SECKILL_MYSQL_DSN", "SECKILL_REDIS_ADDR", "SECKILL_REDLOCK_ADDRS", "SECKILL_TEST_SENTINEL_ADDRS", "SECKILL_TEST_CLUSTER_ADDRS", "SECKILL_TEST_FAKEPAY"}
	if got := names(todo); !slices.Equal(got, want) || len(missing) != 0 {
		t.Errorf("bare machine with everything installed: starts %v, misses %v, want %v", got, missing, want)
	}
	onlyRedis := func(p string) bool { return p == "redis-server" }
	todo, missing = plan(func(k string) string { return map[string]string{"SECKILL_REDIS_ADDR": "set"}[k] }, onlyRedis)
	if got := names(todo); !slices.Equal(got, []string{"SECKILL_REDLOCK_ADDRS", "SECKILL_TEST_FAKEPAY"}) {
		t.Errorf("Redis set, only redis-server installed: starts %v, want the Redlock nodes and the fake pay providers (which need no program)", got)
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

// TestRunStartsFakepay: with SECKILL_TEST_FAKEPAY unset (and the rest
// set), the command gets the path of an env file whose control URL
// answers while it runs (this test binary, run again as the command,
// checks), and the fake is gone once the command ended.
func TestRunStartsFakepay(t *testing.T) {
	for _, s := range steps {
		for _, v := range s.vars {
			t.Setenv(v, "set-by-the-test")
		}
	}
	t.Setenv("SECKILL_TEST_FAKEPAY", "")
	os.Unsetenv("SECKILL_TEST_FAKEPAY")
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("TESTENV_HELPER_OUT", out)
	var log strings.Builder
	code := run(context.Background(), []string{os.Args[0], "-test.run=^TestHelperFakepay$"}, &log)
	if code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the command wrote nothing: %v; log:\n%s", err, log.String())
	}
	envFile, controlURL, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !strings.Contains(log.String(), "SECKILL_TEST_FAKEPAY="+envFile) || !strings.HasPrefix(controlURL, "http://127.0.0.1:") {
		t.Fatalf("the command saw %q; log:\n%s", b, log.String())
	}
	if resp, err := http.Get(controlURL + "/control/alipay/trades"); err == nil {
		resp.Body.Close()
		t.Errorf("the fake at %s still answers after the command ended", controlURL)
	}
	if _, err := os.Stat(envFile); err == nil {
		t.Errorf("the env file %s (and its key directory) outlived the run", envFile)
	}
}

// TestHelperFakepay is the command of TestRunStartsFakepay: it reads the
// env file SECKILL_TEST_FAKEPAY names, calls the control API and writes
// "FILE URL" to TESTENV_HELPER_OUT once the fake answered.
func TestHelperFakepay(t *testing.T) {
	out := os.Getenv("TESTENV_HELPER_OUT")
	if out == "" {
		t.Skip("the command of TestRunStartsFakepay")
	}
	path := os.Getenv("SECKILL_TEST_FAKEPAY")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env, err := fakepay.ParseEnvFile(b)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(env["SECKILL_TEST_FAKEPAY_URL"] + "/control/alipay/trades")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control API: %s", resp.Status)
	}
	if err := os.WriteFile(out, []byte(fmt.Sprintf("%s %s", path, env["SECKILL_TEST_FAKEPAY_URL"])), 0o600); err != nil {
		t.Fatal(err)
	}
}
