package testbed

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"seckill/testkit/proc"
)

// The fault suite's private processes: a MariaDB of its own (here), and Redis
// servers and Sentinels of its own (testkit/redisproc). They listen on free
// loopback ports and run in the suite's temporary directory. They never use
// the shared services of .ci/services.sh that other people's tests use. Those
// are MariaDB 3306, Redis 6379-6382, Sentinel 6390/6391/26390-26392 and
// ZooKeeper 2181. So the suite can kill and restart its own at will. Every
// process is the harness's child. The kernel sends it SIGKILL should the
// harness die. The MariaDB runs in its own process group. A Ctrl-C in the
// terminal reaches the harness, which stops it.

// Kill sends SIGKILL and waits until the server has exited.
func (m *MariaDB) Kill() { _ = m.sup.Kill(0) }

// Running says the server runs.
func (m *MariaDB) Running() bool { return m.sup.Running() }

// FreePort says nothing accepts connections on 127.0.0.1:port.
func FreePort(port int) bool { return !PortOpen(port) }

// MariaDB is a mariadbd of the suite's own, on its own datadir,
// port and socket. user seckill/seckill owns database seckill.
type MariaDB struct {
	sup  proc.Proc
	Port int
	Dir  string
}

// DSN is the DSN the instances and the audit use.
func (m *MariaDB) DSN() string {
	return fmt.Sprintf("seckill:seckill@tcp(127.0.0.1:%d)/seckill?parseTime=true&loc=Local", m.Port)
}

// StartMariaDB initialises a datadir under dir (mariadb-install-db) and
// starts mariadbd on port. --no-defaults keeps /etc/mysql's port and socket
// (the shared server's) out of it.
func StartMariaDB(ctx context.Context, dir string, port int) (*MariaDB, error) {
	if !FreePort(port) {
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
	if code, err := RunTool(ctx, 2*time.Minute, filepath.Join(dir, "install.log"), nil, install[0], install[1:]...); err != nil {
		return nil, fmt.Errorf("mariadb-install-db exited %d: %v: %s", code, err, proc.Tail(filepath.Join(dir, "install.log"), 3))
	}
	args := []string{"mariadbd", "--no-defaults", "--datadir=" + data,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + logPath, "--skip-name-resolve", "--skip-log-bin", "--max-connections=600",
		"--innodb-buffer-pool-size=128M", "--innodb-log-file-size=48M"}
	if user != "" {
		args = append(args, "--user="+user)
	}
	m := &MariaDB{Port: port, Dir: dir, sup: proc.Proc{Name: "mariadbd", Args: args, Out: filepath.Join(dir, "mariadbd.out"),
		Attr: ownGroup(proc.DieWithParent())}}
	if err := m.sup.Start(); err != nil {
		return nil, err
	}
	if err := m.waitReady(ctx, "root:@tcp(127.0.0.1:"+strconv.Itoa(port)+")/", 60*time.Second); err != nil {
		m.Kill()
		return nil, fmt.Errorf("private MariaDB: %v (log %s: %s)", err, logPath, proc.Tail(logPath, 3))
	}
	db, err := sql.Open("mysql", "root:@tcp(127.0.0.1:"+strconv.Itoa(port)+")/")
	if err != nil {
		m.Kill()
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
			m.Kill()
			return nil, fmt.Errorf("private MariaDB: %s: %w", q, err)
		}
	}
	return m, nil
}

// waitReady polls until the server answers a ping with dsn.
func (m *MariaDB) waitReady(ctx context.Context, dsn string, limit time.Duration) error {
	db, err := sql.Open("mysql", dsn+"?timeout=1s")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	return proc.WaitFor(ctx, "MariaDB on port "+strconv.Itoa(m.Port)+" answers", limit, 100*time.Millisecond, &m.sup, func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return db.PingContext(c) == nil
	})
}

// Restart starts the killed server again on its datadir (InnoDB recovers
// its log) and waits until user seckill can log in.
func (m *MariaDB) Restart(ctx context.Context, limit time.Duration) error {
	if err := proc.WaitFor(ctx, "MariaDB port free", 10*time.Second, 50*time.Millisecond, nil, func() bool { return FreePort(m.Port) }); err != nil {
		return err
	}
	if err := m.sup.Start(); err != nil {
		return err
	}
	return m.waitReady(ctx, strings.Split(m.DSN(), "?")[0], limit)
}

// ProcGroup stops what it holds, in reverse order of adding.
type ProcGroup struct {
	mu    sync.Mutex
	stops []func()
}

// Add registers a stop function.
func (g *ProcGroup) Add(stop func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stops = append(g.stops, stop)
}

// KillAll runs every stop function (the processes get SIGKILL: none holds
// anything worth a graceful stop) and forgets them.
func (g *ProcGroup) KillAll() {
	g.mu.Lock()
	stops := g.stops
	g.stops = nil
	g.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// ownGroup puts the child in a process group of its own, so that a Ctrl-C
// in the terminal reaches only the harness, which stops it.
func ownGroup(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Setpgid = true
	return a
}
