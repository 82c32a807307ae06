package repository

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"seckill/lua"
)

// The admission batcher's bounds (admitBatcher).
const (
	// admitBatchMax is the most admissions one pipeline carries.
	admitBatchMax = 64
	// admitInFlight is how many admission round trips may be in flight at
	// once; admissions arriving while they all are wait for the next
	// pipeline.
	admitInFlight = 2
)

// errAdmitNotSent is the error of an admission whose caller gave up (its
// context ended) while it still waited for a pipeline: it was never sent,
// and never will be.
var errAdmitNotSent = errors.New("admission not sent")

// admitBatcher coalesces concurrent admissions into pipelined round trips
// to Redis. When no round trip is in flight an admission goes at once, on
// its caller's goroutine and context, alone (no added wait). Admissions
// arriving while admitInFlight round trips are in flight queue up, and
// the next round trip takes up to admitBatchMax of them in one pipeline of
// EVALSHAs, each sent at most once (onceCmd: a pipeline holding one is
// never re-sent by go-redis). Each admission keeps its own reply: a
// verdict, a Redis error, or, when the pipeline was cut (a timeout, a
// dropped connection), the transport error, which Admit settles exactly as
// a lone admission's.
//
// The queued round trips are sent by a goroutine that runs while the
// queue is not empty; each of its round trips is bounded by the client's
// I/O timeouts, so it ends at the latest one timeout after the last
// admission arrived.
//
// Its zero value is ready to use.
type admitBatcher struct {
	mu       sync.Mutex
	queue    []*admitCall
	inFlight int // round trips in flight
	// observe, when set, is told of every round trip with the number of
	// admissions it carries (Admission.ObservePipelines).
	observe func(n int)
}

// ObservePipelines has f told of every admission round trip to Redis with
// the number of admissions it carries: 1 for an admission sent at once,
// alone; up to admitBatchMax for a pipeline (a pipeline re-sent after
// NOSCRIPT counts once). f runs on the admitting goroutines and must be
// quick and safe for concurrent use (a metric). nil (the default) turns it
// off. Set it before the first Admit: it is not guarded.
func (a *Admission) ObservePipelines(f func(n int)) { a.batch.observe = f }

// sent tells the observer of a round trip of n admissions.
func (b *admitBatcher) sent(n int) {
	if b.observe != nil {
		b.observe(n)
	}
}

// admitCall is one admission waiting for its round trip.
type admitCall struct {
	args   []any      // EVALSHA seckill.lua ...
	cmd    *redis.Cmd // its reply, once done is closed
	done   chan struct{}
	queued bool // guarded by admitBatcher.mu: still in the queue, not sent
}

// eval runs seckill.lua with args (the EVALSHA command's arguments after
// the script hash: key count, keys, ARGV), sent at most once, and returns
// its reply. When ctx ends first the reply is ctx's error: wrapped in
// errAdmitNotSent when the admission was never sent; otherwise it may or
// may not run, and the caller settles it.
func (b *admitBatcher) eval(ctx context.Context, rdb redis.UniversalClient, args []any) *redis.Cmd {
	b.mu.Lock()
	if b.inFlight < admitInFlight && len(b.queue) == 0 {
		b.inFlight++
		b.mu.Unlock()
		b.sent(1)
		cmd := evalOnce(ctx, rdb, lua.Seckill, args)
		b.release(rdb)
		return cmd
	}
	c := &admitCall{args: args, done: make(chan struct{}), queued: true}
	b.queue = append(b.queue, c)
	b.mu.Unlock()

	select {
	case <-c.done:
		return c.cmd
	case <-ctx.Done():
	}
	b.mu.Lock()
	queued := c.queued
	if queued {
		b.queue = remove(b.queue, c)
		c.queued = false
	}
	b.mu.Unlock()
	cmd := redis.NewCmd(ctx)
	if queued {
		cmd.SetErr(errors.Join(errAdmitNotSent, ctx.Err()))
	} else {
		cmd.SetErr(ctx.Err()) // in flight: may have run
	}
	return cmd
}

// release ends a round trip: the next one starts when admissions queued
// meanwhile.
func (b *admitBatcher) release(rdb redis.UniversalClient) {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.inFlight--
		b.mu.Unlock()
		return
	}
	batch := b.take()
	b.mu.Unlock()
	go b.drain(rdb, batch)
}

// drain sends batch, then the admissions queued meanwhile, until none is.
func (b *admitBatcher) drain(rdb redis.UniversalClient, batch []*admitCall) {
	for {
		b.send(rdb, batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		batch = b.take()
		b.mu.Unlock()
	}
}

// take removes the next batch from the queue; b.mu is held.
func (b *admitBatcher) take() []*admitCall {
	n := min(len(b.queue), admitBatchMax)
	batch := make([]*admitCall, n)
	copy(batch, b.queue)
	for _, c := range batch {
		c.queued = false
	}
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

// send runs batch as one pipeline and hands each admission its reply. The
// context is none of the callers': one caller's end must not cut the
// others' admissions (the client's I/O timeouts bound the round trip).
func (b *admitBatcher) send(rdb redis.UniversalClient, batch []*admitCall) {
	ctx := context.Background()
	b.sent(len(batch))
	b.pipeline(ctx, rdb, batch)
	// A server without the script cached ran none of them (NOSCRIPT):
	// load it and send those once more.
	var again []*admitCall
	for _, c := range batch {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		if err := lua.Seckill.Load(ctx, rdb).Err(); err != nil {
			for _, c := range again {
				c.cmd.SetErr(err)
			}
		} else {
			b.pipeline(ctx, rdb, again)
		}
	}
	for _, c := range batch {
		close(c.done)
	}
}

// pipeline sends one EVALSHA per admission of batch in one pipeline, each
// at most once, and sets their replies.
func (b *admitBatcher) pipeline(ctx context.Context, rdb redis.UniversalClient, batch []*admitCall) {
	p := rdb.Pipeline()
	for _, c := range batch {
		c.cmd = newEvalSHA(ctx, lua.Seckill, c.args)
		_ = p.Process(ctx, onceCmd{c.cmd}) // queued: the error is Exec's
	}
	_, _ = p.Exec(ctx) // each command holds its own reply or the pipeline's error
}

// remove returns q without c.
func remove(q []*admitCall, c *admitCall) []*admitCall {
	for i, x := range q {
		if x == c {
			copy(q[i:], q[i+1:])
			q[len(q)-1] = nil
			return q[:len(q)-1]
		}
	}
	return q
}
