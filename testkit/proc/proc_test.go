package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartKillStartAgain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.log")
	p := &Proc{Name: "sleeper", Args: []string{"sh", "-c", "echo started; exec sleep 60"}, Out: out}
	if p.Running() || p.Pid() != 0 {
		t.Fatal("running before the start")
	}
	if err := p.Kill(time.Second); err != nil {
		t.Fatalf("Kill before the start: %v", err)
	}
	for round := range 2 {
		if err := p.Start(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !p.Running() || p.Pid() == 0 {
			t.Fatalf("round %d: not running after the start", round)
		}
		if err := p.Start(); err == nil || !strings.Contains(err.Error(), "running already") {
			t.Fatalf("round %d: a second start: %v", round, err)
		}
		want := strings.TrimSuffix(strings.Repeat("started | ", round+1), " | ")
		err := WaitFor(context.Background(), "the output", 30*time.Second, 5*time.Millisecond, p, func() bool {
			return Tail(out, 5) == want
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if err := p.Kill(0); err != nil {
			t.Fatalf("round %d: kill of a stopped process: %v", round, err)
		}
		if p.Running() || p.Pid() != 0 {
			t.Fatalf("round %d: running after the kill", round)
		}
		select {
		case <-p.Exited():
		default:
			t.Fatalf("round %d: Exited not closed after the kill", round)
		}
	}
	if got := Tail(out, 5); got != "started | started" {
		t.Errorf("the output of both starts: %q", got)
	}
}

// TestStop ends a process that exits on SIGTERM and one that ignores it.
func TestStop(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		grace        time.Duration
	}{
		{"gentle", `touch "$0"; exec sleep 60`, 30 * time.Second},
		{"stubborn", `trap "" TERM; touch "$0"; while :; do sleep 1; done`, 100 * time.Millisecond},
	} {
		ready := filepath.Join(t.TempDir(), "ready")
		p := &Proc{Name: tt.name, Args: []string{"sh", "-c", tt.script, ready}}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		err := WaitFor(context.Background(), tt.name+" is ready", 30*time.Second, 10*time.Millisecond, p, func() bool {
			_, err := os.Stat(ready)
			return err == nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(tt.grace); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if p.Running() {
			t.Fatalf("%s: running after Stop", tt.name)
		}
	}
}

func TestWaitForNamesTheExitAndTheDeadline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.log")
	p := &Proc{Name: "quitter", Args: []string{"sh", "-c", "echo bye; exit 3"}, Out: out}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if p.ExitCode() != -1 && p.Running() {
		t.Error("an exit code while running")
	}
	<-p.Exited()
	if p.ExitCode() != 3 {
		t.Errorf("exit code %d, want 3", p.ExitCode())
	}
	err := WaitFor(context.Background(), "never", time.Minute, time.Millisecond, p, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "quitter exited") || !strings.Contains(err.Error(), "bye") {
		t.Errorf("WaitFor on an exited process: %v", err)
	}
	err = WaitFor(context.Background(), "never", 20*time.Millisecond, time.Millisecond, nil, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "never: not within") {
		t.Errorf("WaitFor past its limit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitFor(ctx, "never", time.Minute, time.Millisecond, nil, func() bool { return false }); err != context.Canceled {
		t.Errorf("WaitFor after its context ended: %v", err)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("a signal to an exited process: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Errorf("a start after the exit: %v", err)
	}
	p.Kill(0)
}
