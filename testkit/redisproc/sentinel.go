package redisproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SentinelOptions configure one redis-sentinel. Dir, MasterName and Master
// are required.
type SentinelOptions struct {
	// Dir is the directory under which the Sentinel gets its own working
	// directory (sentinel-<port>) with its configuration file, which the
	// Sentinel rewrites, and its log. Required.
	Dir string
	// Port is the 127.0.0.1 port to listen on. Default 0: a free port
	// between 20000 and 26999 (see portLow).
	Port int
	// MasterName is the name the Sentinel monitors the primary under.
	// Required.
	MasterName string
	// Master is the "host:port" of the primary to monitor. Required.
	Master string
	// Quorum is how many Sentinels must agree that the primary is down.
	// Default 2.
	Quorum int
	// DownAfter is how long the primary may not answer before it is
	// considered down. Default 1s.
	DownAfter time.Duration
	// FailoverTimeout bounds each step of a failover. A Sentinel does not
	// try another failover of the same primary within twice this time.
	// Default 5s.
	FailoverTimeout time.Duration
	// Bin is the redis-sentinel binary. Default "redis-sentinel" on PATH.
	Bin string
	// Log receives one line per start and kill. Default: discard.
	Log *slog.Logger
	// Password is the Sentinel's own requirepass. Its readiness PING
	// sends AUTH. Default: none.
	Password string
	// MasterPassword is the primary's password (sentinel auth-pass).
	// Default: none.
	MasterPassword string
}

// Sentinel is one redis-sentinel process that this package started.
type Sentinel struct {
	p *process
}

// StartSentinel starts a redis-sentinel that monitors o.Master under
// o.MasterName, and waits within ctx (DefaultWait when ctx has no
// deadline) until it answers PING. It does not wait for the Sentinel to
// find the primary's replicas or the other Sentinels: Set.WaitHealthy does.
func StartSentinel(ctx context.Context, o SentinelOptions) (*Sentinel, error) {
	if o.Dir == "" || o.MasterName == "" || o.Master == "" {
		return nil, errors.New("redisproc: SentinelOptions.Dir, MasterName and Master are required")
	}
	host, port, err := net.SplitHostPort(o.Master)
	if err != nil {
		return nil, fmt.Errorf("redisproc: SentinelOptions.Master: %w", err)
	}
	if o.Quorum == 0 {
		o.Quorum = 2
	}
	if o.DownAfter == 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = 5 * time.Second
	}
	if o.Bin == "" {
		o.Bin = "redis-sentinel"
	}
	p, err := startProc(ctx, procSpec{
		kind: "redis-sentinel", bin: o.Bin, dir: o.Dir, port: o.Port, log: o.Log,
		ping: PingOptions{Password: o.Password},
		args: func(dir string, p int) ([]string, error) {
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf(`port %d
bind 127.0.0.1
protected-mode no
daemonize no
dir %s
logfile %s
sentinel monitor %s %s %s %d
sentinel down-after-milliseconds %[4]s %[8]d
sentinel failover-timeout %[4]s %[9]d
sentinel parallel-syncs %[4]s 1
`, p, dir, filepath.Join(dir, "sentinel.log"), o.MasterName, host, port, o.Quorum,
				o.DownAfter.Milliseconds(), o.FailoverTimeout.Milliseconds())
			if o.Password != "" {
				text += fmt.Sprintf("requirepass %q\n", o.Password)
			}
			if o.MasterPassword != "" {
				text += fmt.Sprintf("sentinel auth-pass %s %q\n", o.MasterName, o.MasterPassword)
			}
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				return nil, err
			}
			return []string{conf}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &Sentinel{p: p}, nil
}

// Addr is the Sentinel's "127.0.0.1:port".
func (s *Sentinel) Addr() string { return s.p.addr() }

// LogFile is the path of the Sentinel's log.
func (s *Sentinel) LogFile() string { return filepath.Join(s.p.dir, "sentinel.log") }

// Kill sends SIGKILL and waits until the process is gone. See Server.Kill.
func (s *Sentinel) Kill() error { return s.p.kill() }

// Close kills the Sentinel.
func (s *Sentinel) Close() error { return s.Kill() }
