// Package redisproc starts throwaway redis-server and redis-sentinel
// processes on free loopback ports. Tests and tools use it to kill and
// restart Redis without touching shared servers. A server can be SIGKILLed
// and restarted on its port, empty. It comes back as a primary or as the
// replica of another. A Set is a primary, its replica and the Sentinels that
// watch them.
//
// The servers keep nothing on disk that survives a restart (no RDB snapshots,
// no AOF). Every process starts with a parent-death signal on Linux. So it
// dies with the process that started it, even when Close is never called. A
// test binary killed by its timeout is such a case. Callers still Close (or
// Kill) what they start.
//
// The signal comes when the OS thread that started the process exits. The Go
// runtime does that only for a goroutine that ends locked to its thread. So
// do not start processes from such a goroutine.
//
// Nothing here depends on package testing. Every call takes a context that
// bounds its waits and returns an error.
package redisproc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"seckill/testkit/proc"
)

// DefaultWait bounds a wait (a start, a kill, a health check) whose context
// has no deadline.
const DefaultWait = 15 * time.Second

// startAttempts is how many free ports Start tries: a port found free can
// be taken by someone else before the server binds it.
const startAttempts = 5

// Available reports whether redis-server and redis-sentinel are on PATH.
func Available() error {
	var errs []error
	for _, bin := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(bin); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Options configure one redis-server. Only Dir is required.
type Options struct {
	// Dir is the directory under which the server gets its own working
	// directory (redis-<port>) with its log. Required.
	Dir string
	// Port is the 127.0.0.1 port to listen on. Default 0: a free port
	// between 20000 and 26999 (see portLow).
	Port int
	// ReplicaOf is the "host:port" of the primary to replicate. Default
	// empty: a primary.
	ReplicaOf string
	// Args are further redis-server arguments, e.g. {"--maxmemory",
	// "64mb"}. They come last, so they override the defaults. Default none.
	Args []string
	// Bin is the redis-server binary. Default "redis-server" on PATH.
	Bin string
	// Log receives one line per start, kill and restart. Default: discard.
	Log *slog.Logger
	// Username and Password, when Password is set, are sent with AUTH
	// before the readiness PING: give the same password in Args
	// (--requirepass, or a --user line). Default: no AUTH.
	Username, Password string
	// TLS, when set, makes Port a TLS port (--tls-port, no plain port) and
	// the readiness PING goes over TLS with it. Args must name the
	// server's certificate files (--tls-cert-file, --tls-key-file,
	// --tls-ca-cert-file). Default: plain TCP.
	TLS *tls.Config
}

// Server is one redis-server process that this package started. Its
// methods are safe for concurrent use.
type Server struct {
	opts Options
	p    *process
}

// Start starts a redis-server and waits, within ctx (DefaultWait when ctx
// has no deadline), until it answers PING. The server listens on 127.0.0.1,
// keeps no snapshot or AOF, and starts a replica's full sync at once
// (diskless, no delay).
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("redisproc: Options.Dir is required")
	}
	if o.Bin == "" {
		o.Bin = "redis-server"
	}
	s := &Server{opts: o}
	p, err := startProc(ctx, procSpec{
		kind: "redis-server", bin: o.Bin, dir: o.Dir, port: o.Port, log: o.Log,
		ping: PingOptions{Username: o.Username, Password: o.Password, TLS: o.TLS},
		args: func(dir string, port int) ([]string, error) { return s.args(dir, port, o.ReplicaOf), nil },
	})
	if err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// args is the command line of the server on port, in dir.
func (s *Server) args(dir string, port int, replicaOf string) []string {
	ports := []string{"--port", strconv.Itoa(port)}
	if s.opts.TLS != nil {
		ports = []string{"--port", "0", "--tls-port", strconv.Itoa(port)}
	}
	a := append(ports,
		"--bind", "127.0.0.1", "--protected-mode", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no",
		"--save", "", "--appendonly", "no",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
	)
	if replicaOf != "" {
		host, port, _ := net.SplitHostPort(replicaOf)
		a = append(a, "--replicaof", host, port)
	}
	return append(a, s.opts.Args...)
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.p.addr() }

// Port is the server's port.
func (s *Server) Port() int { return s.p.port }

// LogFile is the path of the server's log.
func (s *Server) LogFile() string { return filepath.Join(s.p.dir, "redis.log") }

// Pid is the process id of the running server, 0 when it is not running.
func (s *Server) Pid() int { return s.p.sup.Pid() }

// Running reports whether the server process is alive.
func (s *Server) Running() bool { return s.p.sup.Running() }

// Kill sends SIGKILL (a crash: nothing is flushed, clients see their
// connections reset) and waits, within DefaultWait, until the process is
// gone. Killing a server that is not running does nothing.
func (s *Server) Kill() error { return s.p.kill() }

// Restart starts the killed server again on the same port, empty. Its working
// directory's RDB files are removed first. It comes back as the replica of
// replicaOf ("host:port"), or as a primary when replicaOf is empty. It waits
// within ctx until the server answers PING. A replica may still be syncing
// then. Restarting a running server is an error.
func (s *Server) Restart(ctx context.Context, replicaOf string) error {
	if s.p.sup.Running() {
		return fmt.Errorf("redisproc: restart %s: still running (Kill it first)", s.Addr())
	}
	rdbs, err := filepath.Glob(filepath.Join(s.p.dir, "*.rdb"))
	if err != nil {
		return err
	}
	for _, f := range rdbs {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("redisproc: restart %s empty: %w", s.Addr(), err)
		}
	}
	return s.p.restart(ctx, s.args(s.p.dir, s.p.port, replicaOf))
}

// Close kills the server. See Kill.
func (s *Server) Close() error { return s.Kill() }

// procSpec says how to start one process.
type procSpec struct {
	kind string // redis-server or redis-sentinel, for messages
	bin  string
	dir  string // parent of the process's own directory
	port int    // 0: a free one
	log  *slog.Logger
	ping PingOptions // of the readiness PING
	// args returns the command line for the process in dir on port
	// (writing whatever file it needs there).
	args func(dir string, port int) ([]string, error)
}

// process is one started process: the redis-server or redis-sentinel of
// a Server or a Sentinel, on its own port and directory.
type process struct {
	kind string // redis-server or redis-sentinel, for messages
	dir  string // the process's own working directory
	port int
	log  *slog.Logger
	ping PingOptions
	sup  proc.Proc
}

// startProc starts spec's process on spec.port or, when it is 0, on a
// free port (another one when the first is taken meanwhile), and waits
// until it answers PING.
func startProc(ctx context.Context, spec procSpec) (*process, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	log := spec.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	attempts := 1
	if spec.port == 0 {
		attempts = startAttempts
	}
	var lastErr error
	for range attempts {
		port := spec.port
		if port == 0 {
			var err error
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		dir := filepath.Join(spec.dir, fmt.Sprintf("%s-%d", strings.TrimPrefix(spec.kind, "redis-"), port))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		args, err := spec.args(dir, port)
		if err != nil {
			return nil, err
		}
		p := &process{kind: spec.kind, dir: dir, port: port, log: log, ping: spec.ping}
		p.sup = proc.Proc{Name: spec.kind, Args: append([]string{spec.bin}, args...),
			Dir: dir, Out: filepath.Join(dir, "stdout.log")}
		if lastErr = p.run(ctx); lastErr == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// restart runs the process again with args on its port.
func (p *process) restart(ctx context.Context, args []string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	p.sup.Args = append([]string{p.sup.Args[0]}, args...)
	if err := p.run(ctx); err != nil {
		return err
	}
	p.log.Info("redisproc: restarted", "kind", p.kind, "addr", p.addr())
	return nil
}

// run starts the process and waits until it answers PING. On failure the
// process is killed and the error quotes the end of its output.
func (p *process) run(ctx context.Context) error {
	if err := p.sup.Start(); err != nil {
		return fmt.Errorf("redisproc: %w", err)
	}
	if err := p.waitReady(ctx); err != nil {
		if kerr := p.kill(); kerr != nil {
			err = errors.Join(err, kerr)
		}
		return fmt.Errorf("redisproc: %s on %s did not come up: %w (log tail: %s)", p.kind, p.addr(), err, p.tail())
	}
	p.log.Info("redisproc: started", "kind", p.kind, "addr", p.addr(), "pid", p.sup.Pid(), "dir", p.dir)
	return nil
}

// waitReady polls PING until the process answers, exits or ctx ends.
func (p *process) waitReady(ctx context.Context) error {
	exited := p.sup.Exited()
	for {
		err := PingWith(ctx, p.addr(), p.ping)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("the process exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last ping: %v)", ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (p *process) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// kill sends SIGKILL and waits until the process has been reaped.
func (p *process) kill() error {
	pid := p.sup.Pid()
	if pid == 0 {
		return nil
	}
	if err := p.sup.Kill(DefaultWait); err != nil {
		return fmt.Errorf("redisproc: %s on %s: %w", p.kind, p.addr(), err)
	}
	p.log.Info("redisproc: killed", "kind", p.kind, "addr", p.addr(), "pid", pid)
	return nil
}

// tail returns the last lines of the process's log and output, for errors.
func (p *process) tail() string {
	var lines []string
	for _, name := range []string{"stdout.log", "redis.log", "sentinel.log"} {
		b, err := os.ReadFile(filepath.Join(p.dir, name))
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimSpace(string(b)), "\n")
		lines = append(lines, all[max(0, len(all)-3):]...)
	}
	if len(lines) == 0 {
		return "(empty)"
	}
	return strings.Join(lines, " | ")
}

// Ping sends PING to the Redis server or Sentinel at addr on a fresh
// connection and returns nil when it answers PONG.
func Ping(ctx context.Context, addr string) error {
	return PingWith(ctx, addr, PingOptions{})
}

// PingOptions are how PingWith connects: AUTH first when Password is set,
// and TLS when TLS is set.
type PingOptions struct {
	Username, Password string
	TLS                *tls.Config
}

// PingWith is Ping with AUTH and TLS as o says.
func PingWith(ctx context.Context, addr string, o PingOptions) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if o.TLS != nil {
		d := tls.Dialer{Config: o.TLS}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	r := bufio.NewReader(conn)
	if o.Password != "" {
		args := []string{"AUTH", o.Password}
		if o.Username != "" {
			args = []string{"AUTH", o.Username, o.Password}
		}
		if err := command(conn, r, "+OK", args...); err != nil {
			return fmt.Errorf("AUTH %s: %w", addr, err)
		}
	}
	if err := command(conn, r, "+PONG", "PING"); err != nil {
		return fmt.Errorf("PING %s: %w", addr, err)
	}
	return nil
}

// command sends args as a RESP array and checks that the reply line is
// want.
func command(w io.Writer, r *bufio.Reader, want string, args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != want {
		return fmt.Errorf("%q", line)
	}
	return nil
}

// Ports are picked at random from [portLow, portHigh). The range lies below
// Linux's default ephemeral range (32768-60999). So neither the local end of
// an outgoing connection nor a listener on port 0 can take a killed server's
// port before its restart. It lies below the harness fault suite's layout
// (27300 up) too. Each port is handed out once per process.
const (
	portLow  = 20000
	portHigh = 27000
)

var (
	portsMu sync.Mutex
	handed  = map[int]bool{} // ports handed out by this process
)

// freePort returns a 127.0.0.1 port nothing listens on now and that this
// process has not handed out before.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := portLow + rand.IntN(portHigh-portLow)
		if handed[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		if err := ln.Close(); err != nil {
			return 0, err
		}
		handed[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("redisproc: no free port in %d-%d", portLow, portHigh-1)
}

// bounded returns ctx, or ctx bounded by DefaultWait when it has no
// deadline.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultWait)
}
