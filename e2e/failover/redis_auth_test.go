package failover

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
	"seckill/testkit/redisproc"
	"seckill/testkit/testcert"
)

// authApp starts the app on MariaDB and the Redis of vars, with no Redlock
// nodes unless vars names them. It returns the start-up error.
func authApp(t *testing.T, vars map[string]string) (*app.App, error) {
	t.Helper()
	dsn, _ := apptest.IntegrationEnv(t)
	all := map[string]string{
		"SECKILL_MYSQL_DSN": dsn, "SECKILL_HTTP_ADDR": "127.0.0.1:0",
		"SECKILL_ENV": "development", // real backends default to production
	}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.Load(apptest.EnvOf(all))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { a.Close() })
	return a, nil
}

// wantReady checks that the app serves /readyz with 200.
func wantReady(t *testing.T, a *app.App) {
	t.Helper()
	if r := apptest.Call(t, a.Handler(), http.MethodGet, "/readyz", "", nil); r.Status != http.StatusOK {
		t.Errorf("/readyz: got %d %+v, want 200", r.Status, r.Body)
	}
}

// wantRefused checks that the start failed with one line naming v.
func wantRefused(t *testing.T, err error, v string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got a started app, want an error naming %s", v)
	}
	t.Logf("start refused: %v", err)
	if !strings.HasPrefix(err.Error(), v+":") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %q, want one line starting with %s:", err, v)
	}
}

// wantWorks checks SET, GET and a script (EVALSHA, loaded on NOSCRIPT)
// through c.
func wantWorks(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	if err := c.Set(ctx, "auth:k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if v, err := c.Get(ctx, "auth:k").Result(); err != nil || v != "v" {
		t.Errorf("GET: got %q, %v, want v", v, err)
	}
	n, err := redis.NewScript(`return redis.call("STRLEN", KEYS[1])`).Run(ctx, c, []string{"auth:k"}).Int()
	if err != nil || n != 1 {
		t.Errorf("script: got %d, %v, want 1", n, err)
	}
}

// TestRedisPassword: with the right SECKILL_REDIS_PASSWORD the app starts
// on a Redis with requirepass and serves, the Redlock nodes included.
// Without it or with a wrong one (at Redis or at a Redlock node) the start
// fails with one line naming SECKILL_REDIS_PASSWORD.
func TestRedisPassword(t *testing.T) {
	const pw = "s3cret pass" // a space: passwords are taken as given
	srv := apptest.PrivateRedis(t, redisproc.Options{Password: pw, Args: []string{"--requirepass", pw}})
	other := apptest.PrivateRedis(t, redisproc.Options{Password: "other", Args: []string{"--requirepass", "other"}})

	c := redisstore.NewRedisClient(srv.Addr(), redisstore.RedisAuth{Password: pw})
	t.Cleanup(func() { c.Close() })
	wantWorks(t, c)

	t.Run("right password", func(t *testing.T) {
		a, err := authApp(t, map[string]string{
			"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_PASSWORD": pw,
			"SECKILL_LOCK_MODE": "redsync", "SECKILL_REDLOCK_ADDRS": srv.Addr(),
		})
		if err != nil {
			t.Fatalf("app.New: %v", err)
		}
		wantReady(t, a)
		for i, n := range a.RedlockNodes() {
			if err := redisstore.PingRedis(context.Background(), n); err != nil {
				t.Errorf("Redlock node %d: %v", i, err)
			}
		}
	})
	for _, tt := range []struct{ name, addr, pw, redlock string }{
		{"no password", srv.Addr(), "", ""},
		{"wrong password", srv.Addr(), "wrong", ""},
		{"Redlock node with another password", srv.Addr(), pw, other.Addr()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := authApp(t, map[string]string{
				"SECKILL_REDIS_ADDR": tt.addr, "SECKILL_REDIS_PASSWORD": tt.pw, "SECKILL_REDLOCK_ADDRS": tt.redlock,
			})
			wantRefused(t, err, "SECKILL_REDIS_PASSWORD")
			if tt.pw != "" && err != nil && strings.Contains(err.Error(), tt.pw) {
				t.Errorf("got %q, want no password in it", err)
			}
		})
	}
	// The binary prints the same line, with no stack trace.
	err := app.Run(context.Background(), []string{"serve"}, apptest.EnvOf(map[string]string{
		"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_DATA_DIR": t.TempDir(), "SECKILL_ENV": "development",
		"SECKILL_HTTP_ADDR": "127.0.0.1:0",
	}), io.Discard, io.Discard)
	wantRefused(t, err, "SECKILL_REDIS_PASSWORD")
}

// TestRedisACLUser: with SECKILL_REDIS_USERNAME and its password the app
// starts on a Redis whose default user is off. A wrong user or password is
// a start error naming both variables.
func TestRedisACLUser(t *testing.T) {
	srv := apptest.PrivateRedis(t, redisproc.Options{
		Username: "seckill", Password: "app-pw",
		Args: []string{"--user", "default", "off", "--user", "seckill", "on", ">app-pw", "~*", "&*", "+@all"},
	})
	c := redisstore.NewRedisClient(srv.Addr(), redisstore.RedisAuth{Username: "seckill", Password: "app-pw"})
	t.Cleanup(func() { c.Close() })
	wantWorks(t, c)

	a, err := authApp(t, map[string]string{
		"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_USERNAME": "seckill", "SECKILL_REDIS_PASSWORD": "app-pw",
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	wantReady(t, a)

	for _, tt := range []struct{ user, pw, want string }{
		{"seckill", "wrong", "SECKILL_REDIS_USERNAME/SECKILL_REDIS_PASSWORD"},
		{"nobody", "app-pw", "SECKILL_REDIS_USERNAME/SECKILL_REDIS_PASSWORD"},
		{"", "app-pw", "SECKILL_REDIS_PASSWORD"}, // the default user is off
	} {
		_, err := authApp(t, map[string]string{
			"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_USERNAME": tt.user, "SECKILL_REDIS_PASSWORD": tt.pw,
		})
		wantRefused(t, err, tt.want)
	}
}

// TestRedisTLS: with SECKILL_REDIS_TLS_CA naming the CA of the server's
// certificate the app starts on a TLS-only Redis with a password. A CA that
// did not sign it, or TLS off, stops the start.
func TestRedisTLS(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	const pw = "tls-pw"
	srv := apptest.PrivateRedis(t, redisproc.Options{
		Password: pw,
		TLS:      &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		Args: []string{
			"--requirepass", pw, "--tls-cert-file", files.Cert, "--tls-key-file", files.Key,
			"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "no",
		},
	})

	a, err := authApp(t, map[string]string{
		"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_PASSWORD": pw, "SECKILL_REDIS_TLS_CA": files.CA,
		"SECKILL_LOCK_MODE": "redsync", "SECKILL_REDLOCK_ADDRS": srv.Addr(),
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	wantReady(t, a)
	wantWorks(t, a.Redis())
	if err := redisstore.PingRedis(context.Background(), a.RedlockNodes()[0]); err != nil {
		t.Errorf("Redlock node over TLS: %v", err)
	}

	other, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = authApp(t, map[string]string{
		"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_PASSWORD": pw, "SECKILL_REDIS_TLS_CA": other.CA,
	})
	wantRefused(t, err, "SECKILL_REDIS_TLS_CA")

	_, err = authApp(t, map[string]string{"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_REDIS_PASSWORD": pw})
	wantRefused(t, err, "SECKILL_REDIS_ADDR")

	// TLS on a plain port: no handshake, the start fails naming TLS.
	plain := apptest.PrivateRedis(t, redisproc.Options{})
	_, err = authApp(t, map[string]string{"SECKILL_REDIS_ADDR": plain.Addr(), "SECKILL_REDIS_TLS_CA": files.CA})
	wantRefused(t, err, "SECKILL_REDIS_ADDR")
	if err != nil && !strings.Contains(err.Error(), "over TLS (SECKILL_REDIS_TLS)") {
		t.Errorf("got %q, want it to say TLS was on", err)
	}
}

// TestRedisSentinelPassword: through a Sentinel with its own requirepass,
// watching a primary with another password, the app starts with both
// passwords. A wrong Sentinel password names SECKILL_REDIS_SENTINEL_PASSWORD,
// a wrong data password SECKILL_REDIS_PASSWORD.
func TestRedisSentinelPassword(t *testing.T) {
	const dataPW, sentinelPW = "data-pw", "sentinel-pw"
	primary := apptest.PrivateRedis(t, redisproc.Options{Password: dataPW, Args: []string{"--requirepass", dataPW}})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := redisproc.StartSentinel(ctx, redisproc.SentinelOptions{
		Dir: t.TempDir(), MasterName: "auth", Master: primary.Addr(), Quorum: 1,
		Password: sentinelPW, MasterPassword: dataPW,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	vars := func(data, sentinel string) map[string]string {
		return map[string]string{
			"SECKILL_REDIS_SENTINEL_ADDRS": s.Addr(), "SECKILL_REDIS_MASTER": "auth",
			"SECKILL_REDIS_PASSWORD": data, "SECKILL_REDIS_SENTINEL_PASSWORD": sentinel,
		}
	}
	a, err := authApp(t, vars(dataPW, sentinelPW))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	wantReady(t, a)
	wantWorks(t, a.Redis())

	_, err = authApp(t, vars(dataPW, "wrong"))
	wantRefused(t, err, "SECKILL_REDIS_SENTINEL_PASSWORD")
	_, err = authApp(t, vars(dataPW, ""))
	wantRefused(t, err, "SECKILL_REDIS_SENTINEL_PASSWORD")
	_, err = authApp(t, vars("wrong", sentinelPW))
	wantRefused(t, err, "SECKILL_REDIS_PASSWORD")
}

// TestRedisClusterPassword: the app starts on a Redis Cluster whose nodes
// require a password and serves. A wrong password names
// SECKILL_REDIS_PASSWORD.
func TestRedisClusterPassword(t *testing.T) {
	const pw = "cluster-pw"
	apptest.PrivateRedis(t, redisproc.Options{}) // skips without redis-server
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Dir: t.TempDir(), Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	addrs := strings.Join(c.Addrs(), ",")

	a, err := authApp(t, map[string]string{"SECKILL_REDIS_CLUSTER_ADDRS": addrs, "SECKILL_REDIS_PASSWORD": pw})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	wantReady(t, a)
	wantWorks(t, a.Redis())

	_, err = authApp(t, map[string]string{"SECKILL_REDIS_CLUSTER_ADDRS": addrs, "SECKILL_REDIS_PASSWORD": "wrong"})
	wantRefused(t, err, "SECKILL_REDIS_PASSWORD")
	_, err = authApp(t, map[string]string{"SECKILL_REDIS_CLUSTER_ADDRS": addrs})
	wantRefused(t, err, "SECKILL_REDIS_PASSWORD")
}
