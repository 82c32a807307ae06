// Package apptest is the harness of the end-to-end tests. It starts apps on
// the real backends of .ci/env.sh or on embedded ones. It sends requests
// through their handlers. It makes users, shops and vouchers, and runs
// storms of buyers. It checks the invariants of docs/contract.md.
//
// Tests that need the real backends skip without SECKILL_MYSQL_DSN and
// SECKILL_REDIS_ADDR. They fail in CI (CI=true).
package apptest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/repository/redisstore"
	"seckill/testkit/testenv"
)

// IntegrationEnv returns the real MySQL DSN and Redis address. It skips the
// test when they are not set, and fails it when CI=true.
func IntegrationEnv(t testing.TB) (dsn, redisAddr string) {
	t.Helper()
	dsn, redisAddr = os.Getenv("SECKILL_MYSQL_DSN"), os.Getenv("SECKILL_REDIS_ADDR")
	if dsn == "" || redisAddr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR must be set in CI")
		}
		t.Skip("SECKILL_MYSQL_DSN / SECKILL_REDIS_ADDR not set: source .ci/env.sh to run against real MariaDB and Redis")
	}
	return dsn, redisAddr
}

// Start starts a wired app on the real backends with the given lock mode.
func Start(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	dsn, redisAddr := IntegrationEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN":     dsn,
		"SECKILL_REDIS_ADDR":    redisAddr,
		"SECKILL_REDLOCK_ADDRS": os.Getenv("SECKILL_REDLOCK_ADDRS"),
		"SECKILL_ZK_ADDRS":      os.Getenv("SECKILL_ZK_ADDRS"),
		"SECKILL_HTTP_ADDR":     "127.0.0.1:0",
		// Real backends default to production. The tests sign with the
		// public development secret and use the development delays.
		"SECKILL_ENV": "development",
		// The shared database holds other tests' unpaid orders: only the
		// lifecycle tests, on databases of their own, let orders expire.
		"SECKILL_PAY_TIMEOUT": SharedPayTimeout,
	}
	cfg := load(t, vars, env)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(a.Close)
	RegisterDB(t, a)
	return a
}

// StartAsync is Start in async mode with the app's log kept and shown when
// the test fails.
func StartAsync(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	a, err := TryStartAsync(t, env)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	return a
}

// StartMode is Start in order mode "sync" and StartAsync in "async".
func StartMode(t *testing.T, mode string, env map[string]string) *app.App {
	t.Helper()
	if mode == "async" {
		return StartAsync(t, env)
	}
	return Start(t, env)
}

// TryStartAsync is StartAsync returning the start-up error.
func TryStartAsync(t *testing.T, env map[string]string) (*app.App, error) {
	t.Helper()
	dsn, _ := IntegrationEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_HTTP_ADDR": "127.0.0.1:0",
		"SECKILL_ORDER_MODE": "async", "SECKILL_LOCK_MODE": "lua",
		"SECKILL_ENV":         "development", // real backends default to production
		"SECKILL_PAY_TIMEOUT": SharedPayTimeout,
	}
	maps.Copy(vars, RedisVars(t))
	cfg := load(t, vars, env)
	buf := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	RegisterDB(t, a)
	t.Cleanup(func() {
		a.Close()
		if t.Failed() {
			t.Logf("app log (last 8 KiB):\n%s", Tail(buf.Bytes(), 8192))
		}
	})
	return a, nil
}

// load is the configuration of vars overridden by env. It takes the
// stream turn when the app will read the shared streams.
func load(t *testing.T, vars, env map[string]string) config.Config {
	t.Helper()
	// The tests' storms (up to 1,600 purchases at once on a cold app, some
	// with slow critical sections) assert 200 or 409 for every answer: the
	// shedder is off unless a test turns it on (e2e/syncmode/shed_test.go).
	vars["SECKILL_SHED_TARGET"] = "0"
	maps.Copy(vars, env)
	TakeStreamTurn(t, vars)
	cfg, err := config.Load(EnvOf(vars))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// SharedPayTimeout is the test apps' pay timeout unless a test sets one. It
// is 30 years, so no app expires another test's orders. The repository
// tests make orders dated 2001 that their own sweeps expire. The e2e
// packages run beside them and must not touch them.
const SharedPayTimeout = "262800h"

func Tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func EnvOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// OnCluster reports whether the shared-Redis integration tests run on the
// Redis Cluster. That is SECKILL_TEST_CLUSTER_ADDRS, chosen by
// SECKILL_TEST_ON_CLUSTER=1 (`make test-cluster`). Otherwise they use the
// Redis of SECKILL_REDIS_ADDR.
func OnCluster() bool { return os.Getenv("SECKILL_TEST_ON_CLUSTER") == "1" }

// RedisVars are the Redis settings of an app on the shared Redis: the one
// of SECKILL_REDIS_ADDR, or the cluster (OnCluster).
func RedisVars(t testing.TB) map[string]string {
	t.Helper()
	_, redisAddr := IntegrationEnv(t)
	if !OnCluster() {
		return map[string]string{"SECKILL_REDIS_ADDR": redisAddr}
	}
	addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	if addrs == "" {
		t.Fatal("SECKILL_TEST_ON_CLUSTER=1 needs SECKILL_TEST_CLUSTER_ADDRS (.ci/env.sh)")
	}
	return map[string]string{"SECKILL_REDIS_ADDR": "", "SECKILL_REDIS_CLUSTER_ADDRS": addrs}
}

// SharedRedis is a client of the Redis the apps of RedisVars use, closed
// when the test ends.
func SharedRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	v := RedisVars(t)
	if addrs := v["SECKILL_REDIS_CLUSTER_ADDRS"]; addrs != "" {
		c := redisstore.NewClusterRedisClient(strings.Split(addrs, ","), redisstore.RedisAuth{})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := redisstore.NewRedisClient(v["SECKILL_REDIS_ADDR"], redisstore.RedisAuth{})
	t.Cleanup(func() { c.Close() })
	return c
}

func Redis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redisstore.NewRedisClient(addr, redisstore.RedisAuth{})
	t.Cleanup(func() { c.Close() })
	return c
}

func OpenDB(t testing.TB) *sql.DB {
	t.Helper()
	dsn, _ := IntegrationEnv(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// RealEnv is the environment of the real backends, with no SECKILL_ENV.
func RealEnv(t *testing.T, extra map[string]string) map[string]string {
	t.Helper()
	dsn, redisAddr := IntegrationEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_REDIS_ADDR": redisAddr,
		"SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_LOG_LEVEL": "error",
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

// PrivateBackends starts an in-process Redis and a fresh database for one
// test. The Redis is a miniredis on wall-clock TTLs. A process on them sees
// only that test's vouchers and consumers. It returns the Redis, a client
// of it, the database's DSN and a handle.
func PrivateBackends(t *testing.T) (*miniredis.Miniredis, *redis.Client, string, *sql.DB) {
	t.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	dsn, db := FreshDatabase(t)
	return m, Redis(t, m.Addr()), dsn, db
}

// FreshDatabase creates an empty database next to the one of
// SECKILL_MYSQL_DSN. The database is dropped when the test ends. It returns
// its DSN and a handle.
func FreshDatabase(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn, _ := IntegrationEnv(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin := OpenDB(t)
	name := fmt.Sprintf("seckill_t%d", RandomBase())
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return cfg.FormatDSN(), db
}

// FreeAddr returns a loopback address whose port was free a moment ago,
// for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// streamTurn counts this process's holders of the stream turn and keeps
// the locked file while any holds it.
var streamTurn struct {
	mu sync.Mutex
	n  int
	f  *os.File
}

// TakeStreamTurn holds a turn until the test ends, when vars describe the
// shared Redis. The turn is for apps whose consumers read the shared
// Redis's order streams. `go test ./...` runs packages in parallel. Another
// package's consumers would claim this test's entries. Holders in one
// process share the turn. It is an flock, which the kernel releases if the
// process dies.
func TakeStreamTurn(t testing.TB, vars map[string]string) {
	t.Helper()
	shared := vars["SECKILL_REDIS_CLUSTER_ADDRS"] != "" ||
		(vars["SECKILL_REDIS_ADDR"] != "" && vars["SECKILL_REDIS_ADDR"] == os.Getenv("SECKILL_REDIS_ADDR"))
	if vars["SECKILL_ORDER_MODE"] != "async" || !shared {
		return
	}
	streamTurn.mu.Lock()
	defer streamTurn.mu.Unlock()
	if streamTurn.n == 0 {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "seckill-e2e-streams.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatalf("stream turn: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			t.Fatalf("stream turn: %v", err)
		}
		streamTurn.f = f
	}
	streamTurn.n++
	t.Cleanup(func() {
		streamTurn.mu.Lock()
		defer streamTurn.mu.Unlock()
		if streamTurn.n--; streamTurn.n == 0 {
			_ = syscall.Flock(int(streamTurn.f.Fd()), syscall.LOCK_UN)
			streamTurn.f.Close()
			streamTurn.f = nil
		}
	})
}
