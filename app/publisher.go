package app

import "seckill/observe/live"

// livePublisher publishes this process's live dashboard counters to Redis.
// At its stop it publishes once more and retires the instance. So it
// stops before Redis closes.
type livePublisher struct{ loop }

func newLivePublisher(p *live.Publisher) *livePublisher {
	return &livePublisher{loop{run: p.Run}}
}

// Name is "live publisher".
func (*livePublisher) Name() string { return "live publisher" }
