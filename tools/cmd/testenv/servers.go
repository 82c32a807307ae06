package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"seckill/testkit/proc"
	"seckill/testkit/redisproc"
	"seckill/tools/cmd/harness/testbed"
	"seckill/tools/internal/fakepay"
)

// step is one private service: the variables it sets and the programs
// it needs.
type step struct {
	name  string   // what it is, for the log
	vars  []string // the variables it sets; it runs when the first is unset
	needs []string // programs that must be installed
	start func(ctx context.Context, dir string) (vals []string, stop func(), err error)
}

// steps are the services of .ci/env.sh but ZooKeeper, in its order, and
// the fake pay providers.
var steps = []step{
	{name: "MariaDB", vars: []string{"SECKILL_MYSQL_DSN"}, needs: []string{"mariadbd", "mariadb-install-db"}, start: startMariaDB},
	{name: "Redis", vars: []string{"SECKILL_REDIS_ADDR"}, needs: []string{"redis-server"}, start: startRedis(1)},
	{name: "Redlock nodes", vars: []string{"SECKILL_REDLOCK_ADDRS"}, needs: []string{"redis-server"}, start: startRedis(3)},
	{name: "Sentinel-managed Redis", vars: []string{"SECKILL_TEST_SENTINEL_ADDRS", "SECKILL_TEST_SENTINEL_MASTER"},
		needs: []string{"redis-server", "redis-sentinel"}, start: startSentinels},
	{name: "Redis Cluster", vars: []string{"SECKILL_TEST_CLUSTER_ADDRS"}, needs: []string{"redis-server", "redis-cli"}, start: startCluster},
	// The fake pay providers run in this process: the tests read the env
	// file the variable names (testkit/fakepayenv).
	{name: "fake pay providers", vars: []string{"SECKILL_TEST_FAKEPAY"}, start: startFakepay},
}

// plan is the steps to run: those whose variable getenv does not have,
// with every program installed. It also returns one line for each step
// left out because a program is missing: its tests skip.
func plan(getenv func(string) string, installed func(string) bool) (todo []step, missing []string) {
	for _, s := range steps {
		if getenv(s.vars[0]) != "" {
			continue
		}
		var lacks []string
		for _, p := range s.needs {
			if !installed(p) {
				lacks = append(lacks, p)
			}
		}
		if len(lacks) == 0 {
			todo = append(todo, s)
			continue
		}
		missing = append(missing, fmt.Sprintf("%s not started (%s not installed): %s stays unset, its tests skip",
			s.name, strings.Join(lacks, ", "), s.vars[0]))
	}
	return todo, missing
}

// installed says the program is on PATH, or in /usr/sbin (mariadbd, off
// the PATH of many users), which it then adds to PATH.
func installed(program string) bool {
	if _, err := exec.LookPath(program); err == nil {
		return true
	}
	if _, err := os.Stat(filepath.Join("/usr/sbin", program)); err != nil {
		return false
	}
	return os.Setenv("PATH", os.Getenv("PATH")+string(os.PathListSeparator)+"/usr/sbin") == nil
}

// start runs the steps at once, each in a directory of its own under
// dir. It returns the variables to add and a stop for all of them.
func start(ctx context.Context, dir string, todo []step, log io.Writer) (env []string, stop func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		stops []func()
		errs  []string
		wg    sync.WaitGroup
	)
	for i, s := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals, stopOne, err := s.start(ctx, filepath.Join(dir, fmt.Sprint(i)))
			mu.Lock()
			defer mu.Unlock()
			if stopOne != nil {
				stops = append(stops, stopOne)
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("private %s: %v", s.name, err))
				return
			}
			for j, v := range s.vars {
				env = append(env, v+"="+vals[j])
			}
			fmt.Fprintf(log, "testenv: private %s for this run: %s=%s\n", s.name, s.vars[0], vals[0])
		}()
	}
	wg.Wait()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	if len(errs) > 0 {
		return nil, stop, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return env, stop, nil
}

// startMariaDB starts a MariaDB on a free port (the fault suite's: user
// seckill/seckill, database seckill).
func startMariaDB(ctx context.Context, dir string) ([]string, func(), error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, nil, err
	}
	m, err := testbed.StartMariaDB(ctx, dir, port)
	if err != nil {
		return nil, nil, err
	}
	return []string{m.DSN()}, m.Kill, nil
}

// startRedis starts n redis-servers; the variable lists their addresses.
func startRedis(n int) func(ctx context.Context, dir string) ([]string, func(), error) {
	return func(ctx context.Context, dir string) ([]string, func(), error) {
		var addrs []string
		var servers []*redisproc.Server
		stop := func() {
			for _, s := range servers {
				_ = s.Close()
			}
		}
		for range n {
			s, err := redisproc.Start(ctx, redisproc.Options{Dir: dir})
			if err != nil {
				return nil, stop, err
			}
			servers = append(servers, s)
			addrs = append(addrs, s.Addr())
		}
		return []string{strings.Join(addrs, ",")}, stop, nil
	}
}

// startSentinels starts a primary, a replica and three Sentinels, as
// .ci/services.sh does (quorum 2, down after 1s, failover timeout 5s).
func startSentinels(ctx context.Context, dir string) ([]string, func(), error) {
	s, err := redisproc.StartSet(ctx, redisproc.SetOptions{Dir: dir, MasterName: "seckill"})
	if err != nil {
		return nil, nil, err
	}
	return []string{strings.Join(s.SentinelAddrs(), ","), "seckill"}, func() { _ = s.Close() }, nil
}

// startCluster starts three masters with a replica each, as
// .ci/services.sh does (cluster-node-timeout 2s).
func startCluster(ctx context.Context, dir string) ([]string, func(), error) {
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Dir: dir, Masters: 3, Replicas: 1})
	if err != nil {
		if c != nil {
			_ = c.Close()
		}
		return nil, nil, err
	}
	return []string{strings.Join(c.Addrs(), ",")}, func() { _ = c.Close() }, nil
}

// startFakepay starts the fake pay providers in this process, their keys
// generated under dir; the variable is the path of their env file.
func startFakepay(ctx context.Context, dir string) ([]string, func(), error) {
	envFile := filepath.Join(dir, "fakepay.env")
	// Not ctx: it ends with the start of the servers, the fake lives on.
	s, err := fakepay.Start(context.WithoutCancel(ctx), fakepay.Options{KeyDir: filepath.Join(dir, "keys"), EnvFile: envFile})
	if err != nil {
		return nil, nil, err
	}
	return []string{envFile}, func() { _ = s.Close() }, nil
}
