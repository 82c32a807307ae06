package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
)

// recorded is a component that writes its starts and stops to a shared log.
// Its Stop fails when another component's Stop is still under way.
type recorded struct {
	name     string
	log      *[]string
	stopping *bool
	startErr error
	on       bool
}

func (r *recorded) Name() string { return r.name }

func (r *recorded) Start(context.Context) error {
	if r.startErr != nil {
		return r.startErr
	}
	r.on = true
	*r.log = append(*r.log, "start "+r.name)
	return nil
}

func (r *recorded) Stop(context.Context) error {
	if *r.stopping {
		return errors.New("stopped while another stop was under way")
	}
	*r.stopping = true
	defer func() { *r.stopping = false }()
	r.on = false
	*r.log = append(*r.log, "stop "+r.name)
	return nil
}

func (r *recorded) running() bool { return r.on }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestGroupStopsInReverse: a group starts its components in order and stops
// them in the reverse order, one after the other.
func TestGroupStopsInReverse(t *testing.T) {
	var log []string
	var stopping bool
	cs := []component{
		&recorded{name: "a", log: &log, stopping: &stopping},
		&recorded{name: "b", log: &log, stopping: &stopping},
		&recorded{name: "c", log: &log, stopping: &stopping},
	}
	g := group{log: discard()}
	if err := g.start(context.Background(), cs...); err != nil {
		t.Fatal(err)
	}
	g.stop(context.Background())
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Errorf("got %q, want %q", log, want)
	}
	if len(g.running) != 0 {
		t.Errorf("%d components still listed after stop", len(g.running))
	}
}

// TestGroupStartFailure: a component that fails to start is named in the
// error. Those started before it run until stop; none after it starts.
func TestGroupStartFailure(t *testing.T) {
	var log []string
	var stopping bool
	cs := []component{
		&recorded{name: "a", log: &log, stopping: &stopping},
		&recorded{name: "b", log: &log, stopping: &stopping, startErr: errors.New("no")},
		&recorded{name: "c", log: &log, stopping: &stopping},
	}
	g := group{log: discard()}
	err := g.start(context.Background(), cs...)
	if err == nil || err.Error() != "start b: no" {
		t.Fatalf("got %v, want start b: no", err)
	}
	g.stop(context.Background())
	want := []string{"start a", "stop a"}
	if !slices.Equal(log, want) {
		t.Errorf("got %q, want %q", log, want)
	}
}

// TestLoopStopWaits: Stop returns only once the loop's function has
// returned. A second Start while it runs is refused; after Stop it starts
// again.
func TestLoopStopWaits(t *testing.T) {
	returned := make(chan struct{}, 2)
	l := &loop{run: func(ctx context.Context) {
		<-ctx.Done()
		returned <- struct{}{}
	}}
	if l.running() {
		t.Fatal("running before Start")
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	for range 2 {
		if err := l.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := l.Start(context.Background()); !errors.Is(err, errRunning) {
			t.Fatalf("second Start: got %v, want errRunning", err)
		}
		if !l.running() {
			t.Fatal("not running after Start")
		}
		if err := l.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-returned:
		default:
			t.Fatal("Stop returned before the loop did")
		}
		if l.running() {
			t.Fatal("running after Stop")
		}
	}
}

// TestLoopOutlivesStartContext: the loop runs on after the context given to
// Start ends. Only Stop ends it.
func TestLoopOutlivesStartContext(t *testing.T) {
	got := make(chan context.Context, 1)
	l := &loop{run: func(ctx context.Context) {
		got <- ctx
		<-ctx.Done()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lctx := <-got
	cancel() // a derived context would end here, before cancel returns
	if err := lctx.Err(); err != nil {
		t.Fatalf("the loop's context ended with its start context: %v", err)
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("after Stop the loop's context is %v, want context.Canceled", err)
	}
}
