package main

// The fault suite's private processes: a MariaDB, Redis servers and a
// Sentinel setup that belong to the suite alone. They run on their own
// loopback ports in the suite's temporary directory, never on the shared
// services of .ci/services.sh (MariaDB 3306, Redis 6379-6382, Sentinel
// 6390/6391/26390-26392, ZooKeeper 2181) that other people's tests use, so
// the suite can kill and restart them at will. Every process is the
// harness's child, in its own process group (a Ctrl-C in the terminal
// reaches the harness, which stops them in order), and gets SIGKILL from
// the kernel should the harness die.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// sharedPorts are the ports of .ci/services.sh: the suite refuses to use
// any of them.
var sharedPorts = map[int]bool{3306: true, 6379: true, 6380: true, 6381: true, 6382: true,
	6390: true, 6391: true, 26390: true, 26391: true, 26392: true, 2181: true}

// faultPorts are the suite's ports, all derived from one base.
type faultPorts struct {
	App       [2]int // the two seckill instances
	MariaDB   int
	Redis     int    // the main Redis of every case but the Sentinel one
	Redlock   [3]int // independent Redlock nodes
	Data      [2]int // Sentinel-managed primary and replica
	Sentinels [3]int
}

// portsFrom lays the ports out from base: app base+1, +2; MariaDB +6;
// Redis +10; Redlock +11..+13; Sentinel data nodes +20, +21; Sentinels
// +25..+27.
func portsFrom(base int) faultPorts {
	return faultPorts{
		App: [2]int{base + 1, base + 2}, MariaDB: base + 6, Redis: base + 10,
		Redlock: [3]int{base + 11, base + 12, base + 13},
		Data:    [2]int{base + 20, base + 21}, Sentinels: [3]int{base + 25, base + 26, base + 27},
	}
}

// all lists every port.
func (p faultPorts) all() []int {
	out := append([]int{}, p.App[:]...)
	out = append(out, p.MariaDB, p.Redis)
	out = append(out, p.Redlock[:]...)
	out = append(out, p.Data[:]...)
	return append(out, p.Sentinels[:]...)
}

// check refuses a layout that touches a shared service's port or leaves
// the unprivileged range.
func (p faultPorts) check() error {
	for _, port := range p.all() {
		if sharedPorts[port] {
			return fmt.Errorf("port %d belongs to the shared services of .ci/services.sh: choose another FAULTS_BASE_PORT", port)
		}
		if port < 1024 || port > 65535 {
			return fmt.Errorf("port %d is out of range: choose another FAULTS_BASE_PORT", port)
		}
	}
	return nil
}

// proc is one private server process.
type proc struct {
	name string
	args []string // argv, [0] the program
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts the process (again, after a kill); its output is appended
// to its log.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s is running already", p.name)
		}
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// running says the process has been started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process (nothing when it is not running).
func (p *proc) signal(sig syscall.Signal) error {
	if !p.running() {
		return fmt.Errorf("%s is not running", p.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits until the process has exited (it is
// resumed first, should it be stopped).
func (p *proc) kill() {
	if !p.running() {
		return
	}
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Process.Signal(syscall.SIGCONT)
	<-done
}

// stop asks the process to end (SIGTERM), waits up to limit, then kills it.
func (p *proc) stop(limit time.Duration) {
	if !p.running() {
		return
	}
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(limit):
		p.kill()
	}
}

// pid is the process id (0 when not running).
func (p *proc) pid() int {
	if !p.running() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// waitFor polls cond every step until it is true, the process exits
// (p may be nil), ctx ends or limit passes; the error names what.
func waitFor(ctx context.Context, what string, limit, step time.Duration, p *proc, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return nil
		}
		if p != nil && !p.running() {
			return fmt.Errorf("%s: %s exited (log %s: %s)", what, p.name, p.log, lastLines(p.log, 3))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
	}
}

// freePort says nothing accepts connections on 127.0.0.1:port.
func freePort(port int) bool { return !portOpen(port) }

// ---------------------------------------------------------------- MariaDB

// privateMariaDB is a mariadbd of the suite's own, on its own datadir,
// port and socket; user seckill/seckill owns database seckill.
type privateMariaDB struct {
	proc
	port int
	dir  string
}

// mariadbDSN is the DSN the instances and the audit use.
func (m *privateMariaDB) dsn() string {
	return fmt.Sprintf("seckill:seckill@tcp(127.0.0.1:%d)/seckill?parseTime=true&loc=Local", m.port)
}

// startMariaDB initialises a datadir under dir (mariadb-install-db) and
// starts mariadbd on port; --no-defaults keeps /etc/mysql's port and socket
// (the shared server's) out of it.
func startMariaDB(ctx context.Context, dir string, port int) (*privateMariaDB, error) {
	if !freePort(port) {
		return nil, fmt.Errorf("MariaDB port %d is taken", port)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	user := "root"
	if os.Geteuid() != 0 {
		user = ""
	}
	install := []string{"mariadb-install-db", "--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}
	if user != "" {
		install = append(install, "--user="+user)
	}
	logPath := filepath.Join(dir, "mariadb.log")
	if code, err := runTool(ctx, 2*time.Minute, filepath.Join(dir, "install.log"), nil, install[0], install[1:]...); err != nil {
		return nil, fmt.Errorf("mariadb-install-db exited %d: %v: %s", code, err, lastLines(filepath.Join(dir, "install.log"), 3))
	}
	args := []string{"mariadbd", "--no-defaults", "--datadir=" + data,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + logPath, "--skip-name-resolve", "--skip-log-bin", "--max-connections=600",
		"--innodb-buffer-pool-size=128M", "--innodb-log-file-size=48M"}
	if user != "" {
		args = append(args, "--user="+user)
	}
	m := &privateMariaDB{proc: proc{name: "mariadbd", args: args, log: filepath.Join(dir, "mariadbd.out")}, port: port, dir: dir}
	if err := m.start(); err != nil {
		return nil, err
	}
	if err := m.waitReady(ctx, "root:@tcp(127.0.0.1:"+strconv.Itoa(port)+")/", 60*time.Second); err != nil {
		m.kill()
		return nil, fmt.Errorf("private MariaDB: %v (log %s: %s)", err, logPath, lastLines(logPath, 3))
	}
	db, err := sql.Open("mysql", "root:@tcp(127.0.0.1:"+strconv.Itoa(port)+")/")
	if err != nil {
		m.kill()
		return nil, err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS seckill CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
		"CREATE USER IF NOT EXISTS 'seckill'@'127.0.0.1' IDENTIFIED BY 'seckill'",
		"CREATE USER IF NOT EXISTS 'seckill'@'localhost' IDENTIFIED BY 'seckill'",
		"GRANT ALL PRIVILEGES ON *.* TO 'seckill'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'seckill'@'localhost'",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			m.kill()
			return nil, fmt.Errorf("private MariaDB: %s: %w", q, err)
		}
	}
	return m, nil
}

// waitReady polls until the server answers a ping with dsn.
func (m *privateMariaDB) waitReady(ctx context.Context, dsn string, limit time.Duration) error {
	db, err := sql.Open("mysql", dsn+"?timeout=1s")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	return waitFor(ctx, "MariaDB on port "+strconv.Itoa(m.port)+" answers", limit, 100*time.Millisecond, &m.proc, func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return db.PingContext(c) == nil
	})
}

// restart starts the killed server again on its datadir (InnoDB recovers
// its log) and waits until user seckill can log in.
func (m *privateMariaDB) restart(ctx context.Context, limit time.Duration) error {
	if err := waitFor(ctx, "MariaDB port free", 10*time.Second, 50*time.Millisecond, nil, func() bool { return freePort(m.port) }); err != nil {
		return err
	}
	if err := m.start(); err != nil {
		return err
	}
	return m.waitReady(ctx, strings.Split(m.dsn(), "?")[0], limit)
}

// ---------------------------------------------------------------- Redis

// privateRedis is a redis-server (or redis-sentinel) of the suite's own,
// without persistence (like .ci/services.sh), so a restart is empty.
type privateRedis struct {
	proc
	port int
}

func (r *privateRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// newRedis describes a Redis server on port with its files under dir;
// extra are more configuration arguments (e.g. --replicaof).
func newRedis(dir string, port int, extra ...string) (*privateRedis, error) {
	rdir := filepath.Join(dir, "redis-"+strconv.Itoa(port))
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--dir", rdir, "--daemonize", "no", "--maxclients", "2000"}
	args = append(args, extra...)
	return &privateRedis{proc: proc{name: "redis-server:" + strconv.Itoa(port), args: args, log: rdir + ".log"}, port: port}, nil
}

// startRedis starts a Redis server on port and waits for PING.
func startRedis(ctx context.Context, dir string, port int, extra ...string) (*privateRedis, error) {
	r, err := newRedis(dir, port, extra...)
	if err != nil {
		return nil, err
	}
	return r, r.restart(ctx)
}

// restart starts the (killed) server again, empty, and waits for PING.
func (r *privateRedis) restart(ctx context.Context) error {
	if err := waitFor(ctx, "Redis port "+strconv.Itoa(r.port)+" free", 10*time.Second, 20*time.Millisecond, nil,
		func() bool { return freePort(r.port) }); err != nil {
		return err
	}
	if err := r.start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	return waitFor(ctx, r.name+" answers PING", 15*time.Second, 20*time.Millisecond, &r.proc, func() bool {
		return c.Ping(ctx).Err() == nil
	})
}

// ---------------------------------------------------------------- Sentinel

// sentinelMaster is the master name of the suite's Sentinels.
const sentinelMaster = "faults"

// sentinelSet is a primary, its replica and three Sentinels (quorum 2,
// down-after-milliseconds 1000, failover-timeout 5000, as
// .ci/services.sh), all private.
type sentinelSet struct {
	data      [2]*privateRedis
	sentinels [3]*privateRedis
}

// addrs are the Sentinels' addresses.
func (s *sentinelSet) addrs() []string {
	out := make([]string, len(s.sentinels))
	for i, x := range s.sentinels {
		out[i] = x.addr()
	}
	return out
}

// procs lists every process of the set.
func (s *sentinelSet) procs() []*proc {
	var out []*proc
	for _, r := range append(s.data[:], s.sentinels[:]...) {
		if r != nil {
			out = append(out, &r.proc)
		}
	}
	return out
}

// startSentinels starts the set and waits until every Sentinel names the
// primary, sees the two others and the replica, and the replica is in
// sync. On error what was started is left for the caller's clean-up
// (procs).
func startSentinels(ctx context.Context, dir string, p faultPorts) (*sentinelSet, error) {
	s := &sentinelSet{}
	var err error
	if s.data[0], err = startRedis(ctx, dir, p.Data[0]); err != nil {
		return s, err
	}
	if s.data[1], err = startRedis(ctx, dir, p.Data[1], "--replicaof", "127.0.0.1", strconv.Itoa(p.Data[0])); err != nil {
		return s, err
	}
	for i, port := range p.Sentinels {
		sdir := filepath.Join(dir, "sentinel-"+strconv.Itoa(port))
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			return s, err
		}
		conf := filepath.Join(sdir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
			port, sdir, sentinelMaster, p.Data[0], sentinelMaster, sentinelMaster, sentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return s, err
		}
		s.sentinels[i] = &privateRedis{proc: proc{name: "redis-sentinel:" + strconv.Itoa(port),
			args: []string{"redis-sentinel", conf}, log: sdir + ".log"}, port: port}
		if err := s.sentinels[i].start(); err != nil {
			return s, err
		}
	}
	return s, waitFor(ctx, "the private Sentinels agree on a primary with a replica", 45*time.Second, 100*time.Millisecond, nil,
		func() bool { return s.healthy(ctx, p.Data[0]) == nil })
}

// masterPort is the primary's port as the Sentinel at addr names it.
func masterPort(ctx context.Context, addr string) (int, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	a, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
	if err != nil {
		return 0, err
	}
	if len(a) != 2 {
		return 0, fmt.Errorf("sentinel %s: master address %v", addr, a)
	}
	return strconv.Atoi(a[1])
}

// role is the replication role of the Redis on port ("" when it does not
// answer) and, for a primary, the number of replicas online.
func role(ctx context.Context, port int) (string, int) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return "", 0
	}
	r, online := "", 0
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "role:"); ok {
			r = v
		}
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			online++
		}
	}
	return r, online
}

// healthy says why the set is not (nil when it is): every Sentinel names
// primary, knows two other Sentinels and a replica, and the primary has
// its replica online.
func (s *sentinelSet) healthy(ctx context.Context, primary int) error {
	for _, x := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: x.addr(), DialTimeout: time.Second, MaxRetries: -1})
		m, err := c.Master(ctx, sentinelMaster).Result()
		c.Close()
		if err != nil {
			return err
		}
		if m["port"] != strconv.Itoa(primary) || m["num-other-sentinels"] != "2" || m["num-slaves"] != "1" || m["flags"] != "master" {
			return fmt.Errorf("sentinel %s: port %s, other sentinels %s, replicas %s, flags %s",
				x.addr(), m["port"], m["num-other-sentinels"], m["num-slaves"], m["flags"])
		}
	}
	if r, online := role(ctx, primary); r != "master" || online < 1 {
		return fmt.Errorf("primary %d: role %q, %d replica(s) online", primary, r, online)
	}
	return nil
}

// procGroup stops every process it holds, in reverse order of adding.
type procGroup struct {
	mu    sync.Mutex
	procs []*proc
}

func (g *procGroup) add(ps ...*proc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs = append(g.procs, ps...)
}

// killAll kills every process (SIGKILL: none holds anything worth a
// graceful stop; MariaDB recovers its log at the next start, and there is
// none) and forgets them.
func (g *procGroup) killAll() {
	g.mu.Lock()
	ps := g.procs
	g.procs = nil
	g.mu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].kill()
	}
}

// errNotRunning says a process the case needs is gone.
var errNotRunning = errors.New("not running")

// dialOK says a TCP connection to addr succeeds.
func dialOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}
