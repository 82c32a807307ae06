package app

import "context"

// liveStreams is the context of the live dashboard streams being served. Stop
// ends every stream. The HTTP server's shutdown calls end as well: Shutdown
// alone would wait for them until its deadline, and a stream ends only with
// its client.
type liveStreams struct {
	ctx context.Context
	end context.CancelFunc
}

func newLiveStreams() *liveStreams {
	ctx, end := context.WithCancel(context.Background())
	return &liveStreams{ctx: ctx, end: end}
}

// Name is "live streams".
func (*liveStreams) Name() string { return "live streams" }

// Start does nothing: the streams run with their requests.
func (*liveStreams) Start(context.Context) error { return nil }

// Stop ends every stream. It does not wait: each request ends with its stream.
func (s *liveStreams) Stop(context.Context) error {
	s.end()
	return nil
}

// running reports whether the streams may still run.
func (s *liveStreams) running() bool { return s.ctx.Err() == nil }
