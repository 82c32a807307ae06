package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// A component is one background loop of the app. Start starts it and
// returns. Stop ends it and waits for it. Each component has its own file.
type component interface {
	// Name names the component in errors and log lines.
	Name() string
	// Start starts the loop. It is an error while the loop runs.
	Start(ctx context.Context) error
	// Stop ends the loop and waits for it, until ctx ends where the loop
	// has work to finish (the consumers' batch). It is a no-op when the
	// loop is not running.
	Stop(ctx context.Context) error
	// running reports whether the component runs: from Start until Stop
	// has ended it.
	running() bool
}

// group starts components in order and stops them in the reverse order,
// waiting for each. A component started later may rely on one started
// earlier until it stops.
type group struct {
	log     *slog.Logger
	running []component
}

// start starts each component in order. On an error the ones started keep
// running until stop.
func (g *group) start(ctx context.Context, cs ...component) error {
	for _, c := range cs {
		if err := c.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", c.Name(), err)
		}
		g.running = append(g.running, c)
	}
	return nil
}

// stop stops the running components, the last started first. It waits for
// each before stopping the next. It logs what did not stop cleanly.
func (g *group) stop(ctx context.Context) {
	for i := len(g.running) - 1; i >= 0; i-- {
		c := g.running[i]
		if err := c.Stop(ctx); err != nil {
			g.log.Error("stop component", "component", c.Name(), "err", err)
		}
	}
	g.running = nil
}

// loop runs one function in a goroutine from Start until Stop. The
// function returns once its context ends. The components that are a
// ticking loop embed it.
type loop struct {
	run    func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

// errRunning is Start's error while the loop runs.
var errRunning = errors.New("already running")

// Start runs the function on a context detached from ctx's end. Only Stop
// ends it.
func (l *loop) Start(ctx context.Context) error {
	if l.done != nil {
		return errRunning
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	l.cancel, l.done = cancel, done
	go func() {
		defer close(done)
		l.run(lctx)
	}()
	return nil
}

// Stop cancels the function's context and waits for it to return. The
// function returns promptly then, so Stop waits whatever ctx says.
func (l *loop) Stop(context.Context) error {
	if l.done == nil {
		return nil
	}
	l.cancel()
	<-l.done
	l.cancel, l.done = nil, nil
	return nil
}

// running reports whether the loop runs.
func (l *loop) running() bool { return l.done != nil }
