package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// SeckillScript is the one Go caller of scripts/seckill.lua and of its two
// companions, seckill_settle.lua and seckill_release.lua. Each method runs
// its script once and answers in model's terms: a refusal is its model
// error, the next bucket is model.ErrNextBucket. What follows an answer
// (the next bucket, a settlement, a release) is decided by the service's
// step, service/async/admission.go.
//
// Concurrent admissions share pipelined round trips (evalBatcher, below):
// with one round trip in flight, the next carries every admission that
// arrived meanwhile. docs/benchmark.md measures what that buys.
type SeckillScript struct {
	rdb    redis.UniversalClient
	stream string       // StreamName. Tests use a stream of their own
	batch  *evalBatcher // coalesces concurrent admissions
	// buckets keeps bucketArgs by bucketKey; bucketCount counts them.
	buckets     sync.Map
	bucketCount atomic.Int64
	// traceParent names the admitting request's span for the stream
	// entry. nil (tracing off) stores none.
	traceParent func(context.Context) string
}

// NewSeckillScript returns the caller of seckill.lua on rdb.
func NewSeckillScript(rdb redis.UniversalClient) *SeckillScript {
	return NewSeckillScriptOn(rdb, StreamName)
}

// NewSeckillScriptOn returns a caller that admits into the streams named
// stream, not StreamName. Tests use it to stay off the live streams.
func NewSeckillScriptOn(rdb redis.UniversalClient, stream string) *SeckillScript {
	return &SeckillScript{rdb: rdb, stream: stream, batch: &evalBatcher{}}
}

// CarryTrace stores in each stream entry what f returns for the admitting
// request's context. That is its W3C traceparent. It links the consumer's
// write to the request.
func (s *SeckillScript) CarryTrace(f func(context.Context) string) { s.traceParent = f }

// ObservePipelines has f told of every admission round trip to Redis. f
// gets the number of scripts the trip carries: admissions, and the checks
// of the purchase limits on s's round trips (PurchaseLimits). A script sent
// at once, alone, is 1. A pipeline is up to evalBatchMax. A pipeline re-sent
// after NOSCRIPT counts once. f runs on the admitting goroutines. It must
// be quick and safe for concurrent use (a metric). nil (the default) turns
// it off. Set it before the first Run: it is not guarded.
func (s *SeckillScript) ObservePipelines(f func(n int)) { s.batch.observe = f }

// traceOf is the traceparent of ctx for the stream entry, "" when none.
func (s *SeckillScript) traceOf(ctx context.Context) string {
	if s.traceParent == nil {
		return ""
	}
	return s.traceParent(ctx)
}

// Run runs seckill.lua once for one order in bucket b of the voucher, in
// mode, and answers nil when it admitted the order. home is the user's home
// bucket, told to a run model.AdmitAway. A run away is sent alone; the
// others share the admissions' pipelines. The script's refusals are
// model.ErrSoldOut, model.ErrDuplicateOrder, model.ErrSeckillNotStarted,
// model.ErrSeckillEnded, model.ErrNextBucket, or model.ErrUnavailable
// (wrapping model.ErrVoucherNotLoaded or model.ErrVoucherUnsafe, or for a
// void order id). The errors of the round trip:
//   - model.ErrReplyLost (wrapping the cause): the script was sent and its
//     reply lost. It may have run.
//   - model.ErrUnavailable: never sent (ctx ended while it waited for a
//     pipeline), or Redis refused it for now. It did not run.
//   - any other: Redis answered with an error. It did not run.
func (s *SeckillScript) Run(ctx context.Context, orderID, userID, voucherID int64, b int, mode model.AdmitMode, home int, now time.Time) error {
	shard := BucketShard(voucherID, b)
	v := s.bucketArgs(shard, voucherID)
	// EVALSHA's whole command in one slice, sent as it is.
	args := make([]any, 0, 18)
	args = append(args, "evalsha", seckillHash, 5, v[0], v[1], v[2], v[3], OrderInfoKey(shard, orderID),
		userID, v[4], orderID, now.UnixMilli(), orderInfoTTLArg)
	var cmd *redis.Cmd
	if mode == model.AdmitAway {
		args = append(args, scripts.SeckillAway, s.traceOf(ctx), BucketShard(voucherID, home))
		cmd = evalOnce(ctx, s.rdb, scripts.Seckill, args)
	} else {
		if tp := s.traceOf(ctx); tp != "" {
			args = append(args, scriptMode(mode), tp)
		} else if mode != model.AdmitOnly {
			args = append(args, scriptMode(mode))
		}
		cmd = s.batch.eval(ctx, s.rdb, scripts.Seckill, args)
	}
	code, err := cmd.Int()
	var reply redis.Error
	switch {
	case err == nil:
		return admitErr(code, orderID, voucherID)
	case errors.As(err, &reply):
		return redisErr(err) // Redis answered: the script did not run
	case errors.Is(err, errAdmitNotSent):
		return fmt.Errorf("%w: order %d: %w", model.ErrUnavailable, orderID, err)
	}
	return fmt.Errorf("%w: order %d: %w", model.ErrReplyLost, orderID, err)
}

// seckillHash and orderInfoTTLArg are seckill.lua's SHA1 and ARGV[5], as
// command arguments made once.
var (
	seckillHash     any = scripts.Seckill.Hash()
	orderInfoTTLArg any = int64(OrderInfoTTL / time.Second)
)

// bucketArgs are the admission's arguments that name the voucher's bucket
// in shard: its stock, buyers, voucher and stream keys, and the voucher's
// id, made once per bucket and kept (SeckillKeysIn's first four keys).
func (s *SeckillScript) bucketArgs(shard int, voucherID int64) *[5]any {
	k := bucketKey{shard, voucherID}
	if v, ok := s.buckets.Load(k); ok {
		return v.(*[5]any)
	}
	if s.bucketCount.Add(1) > maxBucketArgs {
		// Many vouchers over the process's life: start again.
		s.buckets.Clear()
		s.bucketCount.Store(1)
	}
	v := &[5]any{StockKeyIn(shard, voucherID), BuyersKeyIn(shard, voucherID),
		VoucherKeyIn(shard, voucherID), ShardKey(shard, s.stream), voucherID}
	s.buckets.Store(k, v)
	return v
}

// bucketKey names one bucket of a voucher: its shard.
type bucketKey struct {
	shard     int
	voucherID int64
}

// maxBucketArgs bounds the buckets SeckillScript keeps the arguments of.
const maxBucketArgs = 4096

// scriptMode is seckill.lua's ARGV[6] for mode.
func scriptMode(mode model.AdmitMode) string {
	switch mode {
	case model.AdmitHome:
		return scripts.SeckillHome
	case model.AdmitAway:
		return scripts.SeckillAway
	}
	return scripts.SeckillOnly
}

// admitErr is what a seckill.lua code means for the order: nil when it
// was admitted.
func admitErr(code int, orderID, voucherID int64) error {
	switch code {
	case scripts.SeckillOK:
		return nil
	case scripts.SeckillSoldOut:
		return model.ErrSoldOut
	case scripts.SeckillDuplicate:
		return model.ErrDuplicateOrder
	case scripts.SeckillNotStarted:
		return model.ErrSeckillNotStarted
	case scripts.SeckillEnded:
		return model.ErrSeckillEnded
	case scripts.SeckillNotLoaded:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherNotLoaded)
	case scripts.SeckillUnsafe:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherUnsafe)
	case scripts.SeckillVoid:
		return fmt.Errorf("%w: order id %d is void", model.ErrUnavailable, orderID)
	case scripts.SeckillMove:
		return model.ErrNextBucket
	}
	return fmt.Errorf("seckill.lua: unexpected code %d", code)
}

// Settle runs seckill_settle.lua once for an order whose admission in
// bucket b lost its reply. nil: the admission happened. model.ErrNextBucket:
// it was a home bucket's reservation. model.ErrOrderVoid: it did not, or is
// not known here, and the order id is void now. It is safe to repeat: a
// second run finds what the first one left. Any other error is the
// client's, as it is.
func (s *SeckillScript) Settle(ctx context.Context, orderID, userID, voucherID int64, b int) error {
	v, err := scripts.SeckillSettle.Run(ctx, s.rdb, settleKeys(BucketShard(voucherID, b), orderID),
		userID, voucherID, int64(VoidTTL/time.Second)).Int()
	switch {
	case err != nil:
		return err
	case v == scripts.SettleAdmitted:
		return nil
	case v == scripts.SettleMoving:
		return model.ErrNextBucket
	case v == scripts.SettleVoid:
		return model.ErrOrderVoid
	}
	return fmt.Errorf("seckill_settle.lua: unexpected verdict %d", v)
}

// Release runs seckill_release.lua once: it ends the reservation of the
// home bucket home, the order admitted in another bucket (moved) or in
// none.
func (s *SeckillScript) Release(ctx context.Context, orderID, userID, voucherID int64, home int, moved bool) error {
	outcome := "void"
	if moved {
		outcome = "moved"
	}
	return redisErr(scripts.SeckillRelease.Run(ctx, s.rdb,
		releaseKeys(BucketShard(voucherID, home), voucherID, orderID),
		userID, voucherID, outcome, int64(VoidTTL/time.Second)).Err())
}

// keys are what SeckillKeys builds for the order (one bucket).
func (s *SeckillScript) keys(voucherID, orderID int64) []string {
	return SeckillKeys(s.stream, voucherID, orderID)
}

// streamKey is the order stream of the voucher's shard.
func (s *SeckillScript) streamKey(voucherID int64) string {
	return ShardKey(VoucherShard(voucherID), s.stream)
}

// A script whose reply may be lost is sent at most once: a second send
// could act twice. evalOnce sends it so, and reloads it on NOSCRIPT.
// evalBatcher sends many so, in one pipeline.
// onceCmd is a command go-redis sends at most once. A failure may come
// after it was written: a lost reply, a timeout. Then it returns the error
// instead of sending again on another connection.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command a second time.
func (onceCmd) NoRetry() bool { return true }

// evalOnce sends script by EVALSHA, at most once. args are the whole
// command: "evalsha", the hash, the key count, the keys, then ARGV, sent
// as they are. On NOSCRIPT the script did not run: it loads the script and sends
// EVALSHA once more.
func evalOnce(ctx context.Context, c redis.UniversalClient, script *redis.Script, args []any) *redis.Cmd {
	send := func() *redis.Cmd {
		cmd := redis.NewCmd(ctx, args...)
		_ = c.Process(ctx, onceCmd{cmd}) // the error is the command's
		return cmd
	}
	cmd := send()
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, c).Err(); err != nil {
			cmd.SetErr(err)
			return cmd
		}
		cmd = send()
	}
	return cmd
}

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
// round trips. SeckillScript and Limiter each have one. With no round trip in
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
	// scripts it carries (SeckillScript.ObservePipelines).
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
	reload *redis.Script // loaded after NOSCRIPT. nil: NOSCRIPT is the reply
	args   []any         // the whole command: "evalsha", hash, key count, keys, ARGV
	cmd    *redis.Cmd    // its reply, once done is closed
	done   chan struct{}
	queued bool // guarded by evalBatcher.mu: still in the queue, not sent
}

// eval runs args, the whole EVALSHA command ("evalsha", the hash, the key
// count, the keys, ARGV), sent at most once, and returns its reply. The server may lack the script (NOSCRIPT: it did not run). With
// reload set, reload is loaded and the script sent once more. Otherwise the
// reply is NOSCRIPT. When ctx ends first the reply is ctx's error. It is
// wrapped in errAdmitNotSent when the script was never sent. Otherwise it
// may or may not run, and the caller settles it.
func (b *evalBatcher) eval(ctx context.Context, rdb redis.UniversalClient, reload *redis.Script, args []any) *redis.Cmd {
	b.mu.Lock()
	if b.inFlight < evalInFlight && len(b.queue) == 0 {
		b.inFlight++
		b.mu.Unlock()
		b.sent(1)
		var cmd *redis.Cmd
		if reload != nil {
			cmd = evalOnce(ctx, rdb, reload, args)
		} else {
			cmd = redis.NewCmd(ctx, args...)
			_ = rdb.Process(ctx, onceCmd{cmd}) // the error is the command's
		}
		b.release(rdb)
		return cmd
	}
	c := &evalCall{reload: reload, args: args, done: make(chan struct{}), queued: true}
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
	return takeBatch(&b.queue, evalBatchMax, func(c *evalCall) { c.queued = false })
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
		c.cmd = redis.NewCmd(ctx, c.args...)
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
