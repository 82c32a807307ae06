package failover

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/testkit/testenv"
	"seckill/testkit/testpair"
)

// The Sentinel-managed Redis of .ci/services.sh: a primary, a replica,
// three Sentinels. An app wired through the Sentinels, on a database of its
// own, serves before and after a forced failover. It sets SECKILL_REDIS_SENTINEL_ADDRS and
// SECKILL_REDIS_MASTER, and no SECKILL_REDIS_ADDR. The failover's effect on
// the locks is not covered here.

// sentinelEnv returns the Sentinels and the master name of the test setup,
// skipping without them (failing when CI=true).
func sentinelEnv(t *testing.T) (addrs []string, master string) {
	t.Helper()
	list, master := os.Getenv("SECKILL_TEST_SENTINEL_ADDRS"), os.Getenv("SECKILL_TEST_SENTINEL_MASTER")
	if list == "" || master == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SECKILL_TEST_SENTINEL_ADDRS and SECKILL_TEST_SENTINEL_MASTER must be set in CI")
		}
		t.Skip("SECKILL_TEST_SENTINEL_ADDRS / SECKILL_TEST_SENTINEL_MASTER not set: source .ci/env.sh to run against the Sentinels of .ci/services.sh")
	}
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs, master
}

// sentinelVars is the environment of an app on the Sentinel-managed Redis.
func sentinelVars(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	dsn, _ := apptest.IntegrationEnv(t)
	addrs, master := sentinelEnv(t)
	vars := map[string]string{
		"SECKILL_MYSQL_DSN":            dsn,
		"SECKILL_REDIS_SENTINEL_ADDRS": strings.Join(addrs, ","),
		"SECKILL_REDIS_MASTER":         master,
		"SECKILL_HTTP_ADDR":            "127.0.0.1:0",
		"SECKILL_LOCK_MODE":            "lua",
		"SECKILL_ENV":                  "development", // real backends default to production
	}
	for k, v := range env {
		vars[k] = v
	}
	return vars
}

// sentinelApp starts an app wired through the Sentinels. Its log shows
// when the test fails.
func sentinelApp(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	cfg, err := config.Load(apptest.EnvOf(sentinelVars(t, env)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.RedisAddr != "" || !cfg.Sentinel() {
		t.Fatalf("config: got RedisAddr %q, Sentinel %v, want the Sentinels only", cfg.RedisAddr, cfg.Sentinel())
	}
	buf := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("app.New through the Sentinels: %v", err)
	}
	apptest.RegisterDB(t, a)
	t.Cleanup(func() {
		a.Close()
		if t.Failed() {
			t.Logf("app log (%s mode, last 8 KiB):\n%s", cfg.OrderMode, apptest.Tail(buf.Bytes(), 8192))
		}
	})
	return a
}

// sentinels are clients of each Sentinel of the setup.
type sentinels struct {
	addrs   []string
	master  string
	clients []*redis.SentinelClient
}

func newSentinels(t *testing.T) *sentinels {
	t.Helper()
	addrs, master := sentinelEnv(t)
	s := &sentinels{addrs: addrs, master: master}
	for _, a := range addrs {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
		t.Cleanup(func() { c.Close() })
		s.clients = append(s.clients, c)
	}
	return s
}

// state describes what the Sentinels say and reports whether the setup is
// healthy. Healthy means every Sentinel names the same master, and no
// failover is in progress. The master also answers as a master. It has a
// replica in sync that every Sentinel sees.
func (s *sentinels) state(ctx context.Context) (master string, healthy bool, why string) {
	for i, c := range s.clients {
		addr, err := c.GetMasterAddrByName(ctx, s.master).Result()
		if err != nil || len(addr) != 2 {
			return "", false, fmt.Sprintf("sentinel %s: master address %v, %v", s.addrs[i], addr, err)
		}
		m := net.JoinHostPort(addr[0], addr[1])
		if master != "" && m != master {
			return "", false, fmt.Sprintf("sentinels disagree: %s and %s", master, m)
		}
		master = m
		info, err := c.Master(ctx, s.master).Result()
		if err != nil || info["flags"] != "master" {
			return master, false, fmt.Sprintf("sentinel %s: master flags %q, %v", s.addrs[i], info["flags"], err)
		}
		replicas, err := c.Replicas(ctx, s.master).Result()
		if err != nil {
			return master, false, fmt.Sprintf("sentinel %s: replicas: %v", s.addrs[i], err)
		}
		ok := false
		for _, r := range replicas {
			if r["flags"] == "slave" && r["master-link-status"] == "ok" && net.JoinHostPort(r["master-host"], r["master-port"]) == master {
				ok = true
			}
		}
		if !ok {
			return master, false, fmt.Sprintf("sentinel %s: no replica in sync among %v", s.addrs[i], replicas)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: master, DialTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:master") || !strings.Contains(info, "state=online") {
		return master, false, fmt.Sprintf("master %s: replication %q, %v", master, info, err)
	}
	return master, true, ""
}

// waitHealthy polls the Sentinels until the setup is healthy (bounded) and
// returns the master's address.
func (s *sentinels) waitHealthy(t *testing.T, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		master, ok, why := s.state(ctx)
		cancel()
		if ok {
			return master
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sentinel setup is not healthy after %v: %s", within, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serverAddr returns the address (127.0.0.1:tcp_port) and role of the Redis
// that rdb talks to.
func serverAddr(ctx context.Context, rdb redis.UniversalClient) (addr, role string, err error) {
	info, err := rdb.Info(ctx, "server", "replication").Result()
	if err != nil {
		return "", "", err
	}
	var port string
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "tcp_port:"); ok {
			port = v
		}
		if v, ok := strings.CutPrefix(line, "role:"); ok {
			role = v
		}
	}
	return net.JoinHostPort("127.0.0.1", port), role, nil
}

// waitTalksTo polls until rdb's commands reach want, answering as master.
func waitTalksTo(t *testing.T, name string, rdb redis.UniversalClient, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got, role string
	var err error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, role, err = serverAddr(ctx, rdb)
		cancel()
		if err == nil && got == want && role == "master" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: its Redis client still talks to %s (role %q, err %v) %v after the failover, want the master %s", name, got, role, err, within, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buyer sends one purchase and records a 200's order id into seen.
func buy(t *testing.T, h http.Handler, vid, user int64, seen *apptest.StormResult) apptest.Result {
	t.Helper()
	tok, err := apptest.DevTokens().Issue(user, "user")
	if err != nil {
		t.Fatal(err)
	}
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
	if r.Status == http.StatusOK {
		id, err := apptest.OrderIDOf(r)
		if err != nil {
			t.Fatal(err)
		}
		seen.OrderIDs[id] = user
	}
	return r
}

// buyRound buys once for each of users (each a 200) and repeats the first
// (DUPLICATE_ORDER).
func buyRound(t *testing.T, when string, h http.Handler, vid int64, users []int64, seen *apptest.StormResult) {
	t.Helper()
	for _, u := range users {
		if r := buy(t, h, vid, u, seen); r.Status != http.StatusOK {
			t.Errorf("%s: user %d: got %d %s, want 200", when, u, r.Status, r.Body.Code)
		}
	}
	if r := buy(t, h, vid, users[0], seen); r.Status != http.StatusConflict || r.Body.Code != "DUPLICATE_ORDER" {
		t.Errorf("%s: user %d again: got %d %s, want 409 DUPLICATE_ORDER", when, users[0], r.Status, r.Body.Code)
	}
}

// TestSentinelFailover: a sync app (lua lock) and an async app serve
// purchases through the Sentinels. They use SECKILL_REDIS_SENTINEL_ADDRS
// and SECKILL_REDIS_MASTER, and no SECKILL_REDIS_ADDR. A forced failover
// follows (SENTINEL FAILOVER). Both apps' clients follow the new master and
// purchases go on. New users get 200 and a repeat gets DUPLICATE_ORDER. The
// invariants hold. The async consumers write the admissions made after the
// failover. `seckill rebuild` works through the Sentinels too. The test
// leaves a master and an in-sync replica behind. It waits for the old
// master to be reconfigured. So it can run again at once.
func TestSentinelFailover(t *testing.T) {
	s := newSentinels(t)
	// The lock package's tests stall the replica and expect the roles to
	// hold. They must not run while this test moves them.
	testpair.Lock(t)
	ctx := context.Background()
	oldMaster := s.waitHealthy(t, 60*time.Second)
	t.Logf("master before the failover: %s", oldMaster)
	// The pair and a database are this test's alone: no other test's
	// vouchers to rebuild, no left-over of an earlier run's database under
	// the new vouchers' ids.
	dsn, db := apptest.FreshDatabase(t)
	flush := redis.NewClient(&redis.Options{Addr: oldMaster})
	defer flush.Close()
	if err := flush.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL on the master %s: %v", oldMaster, err)
	}

	syncApp := sentinelApp(t, map[string]string{"SECKILL_MYSQL_DSN": dsn})
	asyncA := sentinelApp(t, map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_ORDER_MODE": "async"})
	for name, a := range map[string]*app.App{"sync app": syncApp, "async app": asyncA} {
		if addr, role, err := serverAddr(ctx, a.Redis()); err != nil || addr != oldMaster || role != "master" {
			t.Fatalf("%s: talks to %s (role %q, err %v), want the master %s", name, addr, role, err, oldMaster)
		}
		if r := apptest.Call(t, a.Handler(), http.MethodGet, "/readyz", "", nil); r.Status != http.StatusOK {
			t.Fatalf("%s: readyz %d %s, want 200", name, r.Status, r.Body.Code)
		}
	}

	base := apptest.RandomBase()
	users := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = base + from + int64(i)
		}
		return out
	}
	const stock = 20
	syncVID := apptest.PublishVoucher(t, syncApp.Handler(), stock)
	asyncVID := apptest.PublishVoucher(t, asyncA.Handler(), stock)
	syncSeen := apptest.StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}
	asyncSeen := apptest.StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}

	buyRound(t, "sync, before the failover", syncApp.Handler(), syncVID, users(1, 4), &syncSeen)
	buyRound(t, "async, before the failover", asyncA.Handler(), asyncVID, users(101, 4), &asyncSeen)
	apptest.WaitDrained(t, asyncA.Handler(), asyncVID, int64(len(asyncSeen.OrderIDs)))
	written := apptest.CounterValue(t, asyncA, "seckill_async_orders_written_total")

	// Let the replica have every write before it is promoted. This test is
	// about following the master. It is not about what an asynchronous
	// replica may lose.
	master := redis.NewClient(&redis.Options{Addr: oldMaster})
	defer master.Close()
	if n, err := master.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 on the master: got %d replicas, %v, want 1", n, err)
	}

	start := time.Now()
	if err := s.clients[0].Failover(ctx, s.master).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER %s at %s: %v", s.master, s.addrs[0], err)
	}
	var newMaster string
	deadline := time.Now().Add(30 * time.Second)
	for newMaster == "" {
		agreed := ""
		for _, c := range s.clients {
			addr, err := c.GetMasterAddrByName(ctx, s.master).Result()
			if err != nil || len(addr) != 2 {
				agreed = ""
				break
			}
			m := net.JoinHostPort(addr[0], addr[1])
			if m == oldMaster || (agreed != "" && m != agreed) {
				agreed = ""
				break
			}
			agreed = m
		}
		newMaster = agreed
		if newMaster == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the Sentinels do not all report a master other than %s 30s after SENTINEL FAILOVER", oldMaster)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitTalksTo(t, "sync app", syncApp.Redis(), newMaster, 30*time.Second)
	waitTalksTo(t, "async app", asyncA.Redis(), newMaster, 30*time.Second)
	t.Logf("master after the failover: %s (Sentinels and both apps' clients agree after %v)", newMaster, time.Since(start).Round(time.Millisecond))

	buyRound(t, "sync, after the failover", syncApp.Handler(), syncVID, users(11, 4), &syncSeen)
	// Users of before the failover stay refused.
	if r := buy(t, syncApp.Handler(), syncVID, base+2, &syncSeen); r.Body.Code != "DUPLICATE_ORDER" {
		t.Errorf("sync, after the failover: user %d of before again: got %d %s, want DUPLICATE_ORDER", base+2, r.Status, r.Body.Code)
	}
	buyRound(t, "async, after the failover", asyncA.Handler(), asyncVID, users(111, 4), &asyncSeen)
	if r := buy(t, asyncA.Handler(), asyncVID, base+102, &asyncSeen); r.Body.Code != "DUPLICATE_ORDER" {
		t.Errorf("async, after the failover: user %d of before again: got %d %s, want DUPLICATE_ORDER", base+102, r.Status, r.Body.Code)
	}

	if got := apptest.CheckInvariants(t, db, syncVID, syncSeen); got != 8 {
		t.Errorf("sync voucher: got %d orders, want 8", got)
	}
	au, drain := apptest.WaitDrained(t, asyncA.Handler(), asyncVID, int64(len(asyncSeen.OrderIDs)))
	if got := apptest.CheckInvariants(t, db, asyncVID, asyncSeen); got != 8 {
		t.Errorf("async voucher: got %d orders, want 8", got)
	}
	apptest.CheckInvariant5(t, asyncA.Redis(), asyncVID, au)
	if !au.Consistent || au.Oversold {
		t.Errorf("async audit: got %+v, want consistent, not oversold", au)
	}
	if after := apptest.CounterValue(t, asyncA, "seckill_async_orders_written_total"); after-written < 4 {
		t.Errorf("async consumers: wrote %v orders after the failover, want the 4 new admissions", after-written)
	}
	t.Logf("async: the admissions of after the failover written in %v", drain.Round(time.Millisecond))

	// `seckill rebuild` through the Sentinels (it refuses an embedded Redis
	// only).
	var out bytes.Buffer
	vars := sentinelVars(t, map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_ORDER_MODE": "async", "SECKILL_LOG_LEVEL": "error"})
	if err := app.Run(ctx, []string{"rebuild", "--voucher", strconv.FormatInt(asyncVID, 10)}, apptest.EnvOf(vars), &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("rebuild through the Sentinels: %v", err)
	}
	if want := fmt.Sprintf("redis stock %d", stock-8); !strings.Contains(out.String(), want) {
		t.Errorf("rebuild output: got %q, want %q", out.String(), want)
	}
	if r := buy(t, asyncA.Handler(), asyncVID, base+200, &asyncSeen); r.Status != http.StatusOK {
		t.Errorf("async, after rebuild: got %d %s, want 200", r.Status, r.Body.Code)
	}
	apptest.WaitDrained(t, asyncA.Handler(), asyncVID, int64(len(asyncSeen.OrderIDs)))
	apptest.CheckInvariants(t, db, asyncVID, asyncSeen)

	// Leave a master with an in-sync replica (the old master, reconfigured
	// by the Sentinels) for the next run.
	if m := s.waitHealthy(t, 90*time.Second); m != newMaster {
		t.Errorf("after the failover: the Sentinels report %s, want %s", m, newMaster)
	}
	t.Logf("setup healthy again %v after SENTINEL FAILOVER", time.Since(start).Round(time.Millisecond))
}
