package redisstore

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The batcher's bounds (evalBatcher).
const (
	// evalBatchMax is the most scripts one pipeline carries.
	evalBatchMax = 64
	// evalInFlight is how many round trips of one batcher may be in
	// flight at once. Scripts arriving while they all are wait for the
	// next pipeline.
	evalInFlight = 2
)

// errAdmitNotSent is the error of a script whose caller gave up while it
// waited for a pipeline. Its context ended. It was never sent, and never
// will be.
var errAdmitNotSent = errors.New("script not sent")

// evalBatcher coalesces concurrent script runs (EVALSHA) into pipelined
// round trips. Admission and Limiter each have one. With no round trip in
// flight, a script goes at once and alone, on its caller's goroutine.
// Scripts arriving while evalInFlight round trips fly queue up. The next
// round trip takes up to evalBatchMax of them, each sent at most once.
// Each script keeps its own reply, so a cut pipeline is settled per script.
// docs/async.md tells the rest. Its zero value is ready to use.
type evalBatcher struct {
	mu       sync.Mutex
	queue    []*evalCall
	inFlight int // round trips in flight
	// observe, when set, is told of every round trip with the number of
	// scripts it carries (Admission.ObservePipelines).
	observe func(n int)
}

// sent tells the observer of a round trip of n scripts.
func (b *evalBatcher) sent(n int) {
	if b.observe != nil {
		b.observe(n)
	}
}

// evalCall is one script run waiting for its round trip.
type evalCall struct {
	hash   string        // the script's SHA1
	reload *redis.Script // loaded after NOSCRIPT. nil: NOSCRIPT is the reply
	args   []any         // after the hash: key count, keys, ARGV
	cmd    *redis.Cmd    // its reply, once done is closed
	done   chan struct{}
	queued bool // guarded by evalBatcher.mu: still in the queue, not sent
}

// eval runs the script of hash with args, sent at most once, and returns
// its reply. args are EVALSHA's arguments after the hash: key count, keys,
// ARGV. The server may lack the script (NOSCRIPT: it did not run). With
// reload set, reload is loaded and the script sent once more. Otherwise the
// reply is NOSCRIPT. When ctx ends first the reply is ctx's error. It is
// wrapped in errAdmitNotSent when the script was never sent. Otherwise it
// may or may not run, and the caller settles it.
func (b *evalBatcher) eval(ctx context.Context, rdb redis.UniversalClient, hash string, reload *redis.Script, args []any) *redis.Cmd {
	b.mu.Lock()
	if b.inFlight < evalInFlight && len(b.queue) == 0 {
		b.inFlight++
		b.mu.Unlock()
		b.sent(1)
		var cmd *redis.Cmd
		if reload != nil {
			cmd = evalOnce(ctx, rdb, reload, args)
		} else {
			cmd = newEvalSHA(ctx, hash, args)
			_ = rdb.Process(ctx, onceCmd{cmd}) // the error is the command's
		}
		b.release(rdb)
		return cmd
	}
	c := &evalCall{hash: hash, reload: reload, args: args, done: make(chan struct{}), queued: true}
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

// release ends a round trip: the next one starts when scripts queued
// meanwhile.
func (b *evalBatcher) release(rdb redis.UniversalClient) {
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

// drain sends batch, then the scripts queued meanwhile, until none is.
func (b *evalBatcher) drain(rdb redis.UniversalClient, batch []*evalCall) {
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

// take removes the next batch from the queue. b.mu is held.
func (b *evalBatcher) take() []*evalCall {
	n := min(len(b.queue), evalBatchMax)
	batch := make([]*evalCall, n)
	copy(batch, b.queue)
	for _, c := range batch {
		c.queued = false
	}
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

// send runs batch as one pipeline and hands each script its reply. The
// context is none of the callers': one caller's end must not cut the
// others' scripts (the client's I/O timeouts bound the round trip).
func (b *evalBatcher) send(rdb redis.UniversalClient, batch []*evalCall) {
	ctx := context.Background()
	b.sent(len(batch))
	b.pipeline(ctx, rdb, batch)
	// A server without a script cached ran none of its calls (NOSCRIPT):
	// load it and send those once more, when the calls name it.
	var again []*evalCall
	loaded := map[*redis.Script]error{}
	for _, c := range batch {
		if err := c.cmd.Err(); c.reload == nil || err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue
		}
		err, ok := loaded[c.reload]
		if !ok {
			err = c.reload.Load(ctx, rdb).Err()
			loaded[c.reload] = err
		}
		if err != nil {
			c.cmd.SetErr(err)
			continue
		}
		again = append(again, c)
	}
	if len(again) > 0 {
		b.pipeline(ctx, rdb, again)
	}
	for _, c := range batch {
		close(c.done)
	}
}

// pipeline sends one EVALSHA per call of batch in one pipeline, each at
// most once, and sets their replies.
func (b *evalBatcher) pipeline(ctx context.Context, rdb redis.UniversalClient, batch []*evalCall) {
	p := rdb.Pipeline()
	for _, c := range batch {
		c.cmd = newEvalSHA(ctx, c.hash, c.args)
		_ = p.Process(ctx, onceCmd{c.cmd}) // queued: the error is Exec's
	}
	_, _ = p.Exec(ctx) // each command holds its own reply or the pipeline's error
}

// remove returns q without c.
func remove(q []*evalCall, c *evalCall) []*evalCall {
	for i, x := range q {
		if x == c {
			copy(q[i:], q[i+1:])
			q[len(q)-1] = nil
			return q[:len(q)-1]
		}
	}
	return q
}
