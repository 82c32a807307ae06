package commands

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/auth"
	"seckill/config"
	"seckill/e2e/apptest"
)

// TestRunRefusesBadConfig: a bad setting stops the process at start with an
// error naming the variable.
func TestRunRefusesBadConfig(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"unknown lock mode", map[string]string{"SECKILL_LOCK_MODE": "bogus"}, "SECKILL_LOCK_MODE"},
		{"unknown order mode", map[string]string{"SECKILL_ORDER_MODE": "later"}, "SECKILL_ORDER_MODE"},
		{"malformed DSN", map[string]string{"SECKILL_MYSQL_DSN": "not a dsn"}, "SECKILL_MYSQL_DSN"},
		{"malformed redis addr", map[string]string{"SECKILL_REDIS_ADDR": "nohostport"}, "SECKILL_REDIS_ADDR"},
		{"unreachable redis", map[string]string{"SECKILL_REDIS_ADDR": closed, "SECKILL_DATA_DIR": t.TempDir(), "SECKILL_ENV": "development"}, "SECKILL_REDIS_ADDR"},
		{"unreachable mysql", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_ENV": "development"}, "SECKILL_MYSQL_DSN"},
		{"unreachable backends in production", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": strings.Repeat("k", 32),
			"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "http://" + closed, "SECKILL_SMS_WEBHOOK_SECRET": strings.Repeat("w", 32),
			"SECKILL_PAY_PROVIDERS": "alipay", "SECKILL_PAY_NOTIFY_BASE_URL": "https://shop.example", "SECKILL_ALIPAY_APP_ID": "2021", "SECKILL_ALIPAY_PRIVATE_KEY_FILE": "/nonexistent/app.pem", "SECKILL_ALIPAY_PUBLIC_KEY_FILE": "/nonexistent/alipay.pem"}, "SECKILL_MYSQL_DSN"},
		{"production without a pay provider", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": strings.Repeat("k", 32),
			"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "http://" + closed, "SECKILL_SMS_WEBHOOK_SECRET": strings.Repeat("w", 32)}, "SECKILL_PAY_PROVIDERS"},
		{"production with the simulated payment", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": strings.Repeat("k", 32),
			"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": "http://" + closed, "SECKILL_SMS_WEBHOOK_SECRET": strings.Repeat("w", 32), "SECKILL_PAY_PROVIDERS": "simulated"}, "SECKILL_PAY_PROVIDERS"},
		{"production without a code sender", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": strings.Repeat("k", 32)}, "SECKILL_SMS_SENDER"},
		{"production with the log sender", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": strings.Repeat("k", 32), "SECKILL_SMS_SENDER": "log"}, "SECKILL_SMS_SENDER"},
		{"production on embedded backends", map[string]string{"SECKILL_ENV": "production", "SECKILL_JWT_SECRET": strings.Repeat("k", 32)}, "SECKILL_MYSQL_DSN"},
		{"production with the development secret", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed, "SECKILL_JWT_SECRET": config.DevJWTSecret}, "SECKILL_JWT_SECRET"},
		{"production without secret", map[string]string{"SECKILL_ENV": "production"}, "SECKILL_JWT_SECRET"},
		{"real backends without secret", map[string]string{"SECKILL_MYSQL_DSN": "u:p@tcp(" + closed + ")/x", "SECKILL_REDIS_ADDR": closed}, "SECKILL_JWT_SECRET"},
		{"zookeeper without servers", map[string]string{"SECKILL_LOCK_MODE": "zookeeper"}, "SECKILL_ZK_ADDRS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if _, ok := tt.vars["SECKILL_HTTP_ADDR"]; !ok {
				tt.vars["SECKILL_HTTP_ADDR"] = "127.0.0.1:0" // serve binds first
			}
			err := app.Run(context.Background(), []string{"serve"}, apptest.EnvOf(tt.vars), io.Discard, &stderr)
			if err == nil {
				t.Fatal("got nil error, want a refusal")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to name %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("got a multi-line error %q, want one line", err)
			}
		})
	}
}

// TestTokensCommand: tokens creates the missing users once and prints
// userId,token lines whose tokens verify with the right role.
func TestTokensCommand(t *testing.T) {
	vars := map[string]string{"SECKILL_DATA_DIR": t.TempDir()}
	for _, admin := range []bool{false, true} {
		args := []string{"tokens", "--count", "5"}
		role := "user"
		if admin {
			args = append(args, "--admin")
			role = "admin"
		}
		var out1, out2 bytes.Buffer
		if err := app.Run(context.Background(), args, apptest.EnvOf(vars), &out1, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := app.Run(context.Background(), args, apptest.EnvOf(vars), &out2, io.Discard); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out1.String()), "\n")
		if len(lines) != 5 {
			t.Fatalf("got %d lines, want 5", len(lines))
		}
		ids1, ids2 := idsOf(out1.String()), idsOf(out2.String())
		if strings.Join(ids1, ",") != strings.Join(ids2, ",") {
			t.Errorf("second run: got users %v, want the same users %v", ids2, ids1)
		}
		tok := auth.NewTokens(config.DevJWTSecret, time.Hour)
		for _, l := range lines {
			id, token, ok := strings.Cut(l, ",")
			if !ok {
				t.Fatalf("line %q is not userId,token", l)
			}
			c, err := tok.Parse(token)
			if err != nil {
				t.Fatalf("token of %s: %v", id, err)
			}
			if c.Role != role || c.Subject != id {
				t.Errorf("got role %q subject %q, want %q %q", c.Role, c.Subject, role, id)
			}
		}
	}
	if err := app.Run(context.Background(), []string{"tokens", "--count", "0"}, apptest.EnvOf(vars), io.Discard, io.Discard); err == nil {
		t.Error("--count 0: got nil error, want a refusal")
	}
	if err := app.Run(context.Background(), []string{"migrate"}, apptest.EnvOf(vars), io.Discard, io.Discard); err != nil {
		t.Errorf("migrate after tokens: %v", err)
	}
}

// TestTokensFileOwnerOnly: tokens --out writes the file readable by its
// owner only (0600), also over an existing world-readable file.
func TestTokensFileOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"SECKILL_DATA_DIR": dir}
	fresh, old := filepath.Join(dir, "admins.csv"), filepath.Join(dir, "old.csv")
	if err := os.WriteFile(old, []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fresh, old} {
		if err := app.Run(context.Background(), []string{"tokens", "--count", "2", "--admin", "--out", path}, apptest.EnvOf(vars), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want -rw------- (0600)", filepath.Base(path), perm)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Split(strings.TrimSpace(string(b)), "\n")); n != 2 || strings.Contains(string(b), "stale") {
			t.Errorf("%s: %d lines %q, want the 2 token lines only", filepath.Base(path), n, b)
		}
	}
}

func idsOf(s string) []string {
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		id, _, _ := strings.Cut(l, ",")
		ids = append(ids, id)
	}
	return ids
}

// TestServeStopsGracefully: serve on embedded backends answers, and returns
// nil soon after its context ends.
func TestServeStopsGracefully(t *testing.T) {
	_, _, stop := serveForTest(t, map[string]string{"SECKILL_DATA_DIR": t.TempDir()})
	stop() // fails the test unless serve returns nil, in time
}

// TestHelpPrintsUsage: --help (and -h, help) prints the usage and exits.
// It does not start the server.
func TestHelpPrintsUsage(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		t.Run(arg, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			vars := map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_DATA_DIR": t.TempDir()}
			start := time.Now()
			err := app.Run(ctx, []string{arg}, apptest.EnvOf(vars), &stdout, &stderr)
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if !strings.Contains(stdout.String(), "Usage:") || !strings.Contains(stdout.String(), "seckill tokens") {
				t.Errorf("stdout: got %q, want the usage", stdout.String())
			}
			if strings.Contains(stderr.String(), `"msg":"serving"`) || time.Since(start) > 4*time.Second {
				t.Errorf("%s started the server (log: %s)", arg, stderr.String())
			}
		})
	}
}

// TestServingLoggedOnceBound: "serving" is logged once the port is bound.
// A port taken by another process is a one-line error naming
// SECKILL_HTTP_ADDR and nothing claims to serve.
func TestServingLoggedOnceBound(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stderr bytes.Buffer
	vars := map[string]string{"SECKILL_HTTP_ADDR": taken.Addr().String(), "SECKILL_DATA_DIR": t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = app.Run(ctx, []string{"serve"}, apptest.EnvOf(vars), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "SECKILL_HTTP_ADDR") {
		t.Errorf("port taken: got %v, want an error naming SECKILL_HTTP_ADDR", err)
	}
	if strings.Contains(stderr.String(), `"msg":"serving"`) {
		t.Errorf("logged serving on a port it could not bind: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), "embedded backends in use") {
		t.Errorf("opened the backends before binding the port: %s", stderr.String())
	}
}

// TestUndeclaredVariableWarned: a SECKILL_* variable of the process's
// environment that no setting reads (here one a past version read) is
// named in a warning at start, not ignored in silence.
func TestUndeclaredVariableWarned(t *testing.T) {
	t.Setenv("SECKILL_AUTO_REBUILD_AFTER", "5s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	vars := map[string]string{"SECKILL_DATA_DIR": t.TempDir()}
	if err := app.Run(ctx, []string{"migrate"}, apptest.EnvOf(vars), &stdout, &stderr); err != nil {
		t.Fatalf("migrate: %v (log: %s)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"config.undeclared"`) ||
		!strings.Contains(stderr.String(), `"variable":"SECKILL_AUTO_REBUILD_AFTER"`) {
		t.Errorf("no warning naming SECKILL_AUTO_REBUILD_AFTER; log:\n%s", stderr.String())
	}
}
