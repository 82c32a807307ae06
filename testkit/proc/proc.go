// Package proc supervises child processes: it starts one, says whether it
// runs, waits until it is ready, stops it gently or kills it, and starts it
// again. The harness and testkit/redisproc run their servers with it.
package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process that can be started again after it exits.
// Its methods are safe for concurrent use.
type Proc struct {
	Name string   // names the process in errors
	Args []string // the command line; Args[0] is the program
	Env  []string // the environment; nil inherits the caller's
	Dir  string   // the working directory; "" is the caller's
	Out  string   // the file stdout and stderr are appended to; "" discards
	// Attr is the process's attributes; nil means DieWithParent().
	Attr *syscall.SysProcAttr

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been reaped
}

// Start starts the process; it fails while a previous start still runs.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.exited) {
		return fmt.Errorf("%s is running already", p.Name)
	}
	if len(p.Args) == 0 {
		return fmt.Errorf("%s: no command line", p.Name)
	}
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Env, cmd.Dir = p.Env, p.Dir
	cmd.SysProcAttr = p.Attr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = DieWithParent()
	}
	if p.Out != "" {
		f, err := os.OpenFile(p.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close() // the child holds its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		// A killed process exits with an error status: that is expected.
		_ = cmd.Wait()
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// closed says whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// current returns the last start's command and exit channel (nil, nil
// before the first start).
func (p *Proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// Running says the process has been started and has not exited.
func (p *Proc) Running() bool {
	cmd, exited := p.current()
	return cmd != nil && !closed(exited)
}

// Pid is the running process's id, or 0 when none runs.
func (p *Proc) Pid() int {
	cmd, exited := p.current()
	if cmd == nil || closed(exited) {
		return 0
	}
	return cmd.Process.Pid
}

// ExitCode is the exit status of the last start's process once it has
// exited; -1 while it runs, before the first start, or after a signal.
func (p *Proc) ExitCode() int {
	cmd, exited := p.current()
	if cmd == nil || !closed(exited) {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// Exited is closed when the last start's process has exited. Before the
// first start it is nil, which blocks forever in a select.
func (p *Proc) Exited() <-chan struct{} {
	_, exited := p.current()
	return exited
}

// Signal sends sig to the running process; it returns os.ErrProcessDone
// when none runs.
func (p *Proc) Signal(sig os.Signal) error {
	cmd, exited := p.current()
	if cmd == nil || closed(exited) {
		return os.ErrProcessDone
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	return nil
}

// Kill sends SIGKILL and waits up to limit until the process has been
// reaped; limit 0 waits as long as it takes.
func (p *Proc) Kill(limit time.Duration) error {
	return p.end(syscall.SIGKILL, "SIGKILL", limit)
}

// Stop sends SIGTERM, waits up to grace for the exit, then kills.
func (p *Proc) Stop(grace time.Duration) error {
	if p.end(syscall.SIGTERM, "SIGTERM", grace) == nil {
		return nil
	}
	return p.Kill(0)
}

// end sends sig, then SIGCONT so that a stopped process receives it, and
// waits up to limit for the exit.
func (p *Proc) end(sig syscall.Signal, name string, limit time.Duration) error {
	cmd, exited := p.current()
	if cmd == nil || closed(exited) {
		return nil
	}
	if err := p.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	_ = p.Signal(syscall.SIGCONT)
	return p.wait(cmd, exited, limit, name)
}

// wait waits up to limit (0: no limit) for exited to close.
func (p *Proc) wait(cmd *exec.Cmd, exited chan struct{}, limit time.Duration, after string) error {
	if limit <= 0 {
		<-exited
		return nil
	}
	select {
	case <-exited:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("%s (pid %d) still runs %v after %s", p.Name, cmd.Process.Pid, limit, after)
	}
}

// WaitFor polls cond every step until it holds, the process exits (p may
// be nil), ctx ends or limit passes; the error names what it waited for.
func WaitFor(ctx context.Context, what string, limit, step time.Duration, p *Proc, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return nil
		}
		if p != nil && !p.Running() {
			return fmt.Errorf("%s: %s exited (log %s: %s)", what, p.Name, p.Out, Tail(p.Out, 3))
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

// Tail is the last n lines of the file at path, joined by " | ", or ""
// when the file cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// FreePort is a loopback TCP port nothing listens on now, for a server
// to start on.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
