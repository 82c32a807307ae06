package async

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/internal/orderkit"
)

// Dead-letter reasons (stream.orders.dlq field reason, metric label).
const (
	ReasonSoldOut    = "sold_out"   // the database has no stock left for it
	ReasonDuplicate  = "duplicate"  // the user has another order for the voucher
	ReasonMalformed  = "malformed"  // the entry cannot be parsed
	ReasonDeliveries = "deliveries" // consumers kept dying with it
	ReasonFailures   = "failures"   // its write kept failing for an unknown cause
	ReasonIDTaken    = "id_taken"   // its id belongs to another order
)

// ConsumerConfig configures the stream consumers.
// Zero values mean the defaults given.
type ConsumerConfig struct {
	// Consumers is the number of stream consumers of this process.
	// Default DefaultConsumers.
	Consumers int
	// ClaimIdle is how long an entry stays pending before another consumer
	// claims it. It must be at least BatchTimeout. Default DefaultClaimIdle.
	ClaimIdle time.Duration
	// ConsumerDelay pauses each batch between read and write, for development.
	// Default 0.
	ConsumerDelay time.Duration
	// Batch is the most entries a consumer reads and writes at once.
	// Default 100.
	Batch int
	// Block is how long a consumer's read waits for new entries. Default 2s.
	Block time.Duration
	// BatchTimeout bounds one batch: locks, transaction, acknowledgement.
	// Keep it below the lock lease and ClaimIdle. Default DefaultBatchTimeout.
	BatchTimeout time.Duration
	// MaxAttempts is how many tries an entry gets before it is dead-lettered. A
	// try is a delivery (a consumer died with it) or a write failing for an
	// unknown cause. Default 5.
	MaxAttempts int
	// ConsumerPrefix starts the consumer names, then -<random>.
	// Default <hostname>-<pid>.
	ConsumerPrefix string
	// DutyCycle is the most of its time a consumer spends on full batches
	// while this process admits orders.
	// After such a batch it pauses, at most yieldMax.
	// So on shared cores the admissions keep the CPU,
	// and the backlog is written in the gaps and after the burst.
	// 1 never pauses. Default DefaultDuty.
	DutyCycle float64
}

// Defaults of ConsumerConfig. config's settings declare the same values
// (app's tests hold them equal).
const (
	DefaultConsumers    = 1
	DefaultClaimIdle    = 30 * time.Second
	DefaultBatchTimeout = 8 * time.Second
	// DefaultDuty gives a backlog at most a quarter of a consumer's time.
	DefaultDuty = 0.25
)

func (c *ConsumerConfig) defaults() {
	if c.Consumers <= 0 {
		c.Consumers = DefaultConsumers
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = DefaultClaimIdle
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.Block <= 0 {
		c.Block = 2 * time.Second
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = DefaultBatchTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.DutyCycle <= 0 {
		c.DutyCycle = DefaultDuty
	}
	c.DutyCycle = min(c.DutyCycle, 1)
}

// yieldMax bounds a consumer's pause after a full batch
// (ConsumerConfig.DutyCycle).
const yieldMax = 250 * time.Millisecond

// linger is how long a consumer waits for more after reading under half a
// batch. At a low arrival rate, each tiny batch would cost a transaction and
// its fsync.
const linger = 10 * time.Millisecond

// ConsumerDeps are the collaborators of the stream consumers.
type ConsumerDeps struct {
	Queue  OrderQueue
	Orders OrderWriter
	// Fence is the loss fence each write checks (docs/async.md, "the loss
	// fence"). Optional: nil checks nothing (tests of other rules).
	Fence LossFence
	// Locker takes lock:order:<userId> around each write
	// (SECKILL_CONSUMER_LOCK). Optional: nil takes no lock. The admission
	// script and the database's unique key decide one order per user
	// without it (docs/async.md, "The consumers' per-user lock").
	Locker lock.Locker
	// Rejects counts the duplicates only the unique key stopped.
	Rejects orderkit.RejectionCounter
	// Admitted counts this process's admissions (optional).
	// While it moves, consumers keep to ConsumerConfig.DutyCycle.
	Admitted func() uint64
	// Tracer traces each batch, linked to the requests that admitted its
	// orders. Optional: nil traces nothing.
	Tracer   BatchTracer
	Observer orderkit.Observer // optional: lock refusals, unique-key rejections
	Metrics  ConsumerObserver  // optional: batches, writes, dead letters, claims
	// Returned hears of a dead letter's unit given back to Redis (the
	// waiting room); optional.
	Returned UnitsReturned
	Now      func() time.Time
	Log      *slog.Logger
}

// ConsumerGroup writes the orders of the stream to the database.
// Each process runs cfg.Consumers consumers of the group.
type ConsumerGroup struct {
	d    ConsumerDeps
	cfg  ConsumerConfig
	dups orderkit.UniqueKeyRejections
}

// NewConsumerGroup returns the consumers' settings and collaborators.
// StartConsumers starts them.
func NewConsumerGroup(d ConsumerDeps, cfg ConsumerConfig) *ConsumerGroup {
	cfg.defaults()
	if d.Observer == nil {
		d.Observer = orderkit.NopObserver{}
	}
	if d.Metrics == nil {
		d.Metrics = nopConsumerObserver{}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &ConsumerGroup{d: d, cfg: cfg,
		dups: orderkit.UniqueKeyRejections{Obs: d.Observer, Counter: d.Rejects, Log: d.Log, Locker: d.Locker}}
}

// Consumers are the stream consumers of one process.
// Stop them before closing Redis and the database.
type Consumers struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// StartConsumers creates the consumer group if needed and starts the consumers.
// Each is named <prefix>-<random>.
// It refuses a ClaimIdle shorter than BatchTimeout.
func (g *ConsumerGroup) StartConsumers(ctx context.Context) (*Consumers, error) {
	if g.cfg.ClaimIdle < g.cfg.BatchTimeout {
		// An entry could be claimed by another consumer while its batch
		// still runs.
		return nil, fmt.Errorf("claim idle time %v is shorter than the batch timeout %v", g.cfg.ClaimIdle, g.cfg.BatchTimeout)
	}
	if err := g.d.Queue.EnsureGroup(ctx); err != nil {
		return nil, fmt.Errorf("create consumer group: %w", err)
	}
	prefix := g.cfg.ConsumerPrefix
	if prefix == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "host"
		}
		prefix = host + "-" + strconv.Itoa(os.Getpid())
	}
	p := &Consumers{stop: make(chan struct{})}
	for range g.cfg.Consumers {
		c := g.newConsumer(prefix+"-"+rand.Text()[:8], p.stop)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			c.run()
		}()
	}
	g.d.Log.InfoContext(ctx, "consumers started", "count", g.cfg.Consumers, "prefix", prefix,
		"claim_idle", g.cfg.ClaimIdle.String(), "batch", g.cfg.Batch)
	return p, nil
}

// Stop asks the consumers to finish the batch in hand and waits until ctx ends.
// A finished batch is written and acknowledged.
func (p *Consumers) Stop(ctx context.Context) error {
	p.once.Do(func() { close(p.stop) })
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consumers did not stop: %w", ctx.Err())
	}
}

// newConsumer returns a consumer of the group, named name.
// It stops when stop is closed.
func (g *ConsumerGroup) newConsumer(name string, stop <-chan struct{}) *consumer {
	return &consumer{ConsumerGroup: g, stop: stop, name: name, failures: map[string]int{}, cursor: "0-0"}
}

// consumer is one goroutine reading the stream.
// It holds the group's collaborators (d) and settings (cfg).
type consumer struct {
	*ConsumerGroup
	stop <-chan struct{}
	name string
	// failures counts, per entry, this consumer's writes that failed for an
	// unknown cause.
	failures map[string]int
	cursor   string // XAUTOCLAIM scan position
	// fence is the loss fence's value read before every entry in hand.
	// "" until read, and again once a write found it moved.
	fence string
	// recheck holds the entries in hand when a write found the fence moved.
	// Only those still pending with the consumer are written (recheckHeld).
	recheck   []model.QueuedOrder
	nextClaim time.Time
	nextPrune time.Time
	admitted  uint64 // ConsumerDeps.Admitted at the last full batch
}

// yield pauses after a full batch that took took (yieldPause).
func (c *consumer) yield(took time.Duration) {
	if d := c.yieldPause(took); d > 0 {
		c.sleep(d)
	}
}

// yieldPause is the pause after a full batch that took took. It pauses only if
// this process admitted orders since the last full batch. Then the batch
// becomes ConsumerConfig.DutyCycle of the time, at most yieldMax.
func (c *consumer) yieldPause(took time.Duration) time.Duration {
	if c.cfg.DutyCycle >= 1 || c.d.Admitted == nil {
		return 0
	}
	n := c.d.Admitted()
	busy := n != c.admitted
	c.admitted = n
	if !busy {
		return 0
	}
	return min(time.Duration(float64(took)*(1-c.cfg.DutyCycle)/c.cfg.DutyCycle), yieldMax)
}

// pruneIdle is how long an idle consumer with nothing pending lives in the
// group. After it, the consumer is taken for dead and deleted. pruneEvery is
// how often a consumer looks for such.
const (
	pruneIdle  = time.Hour
	pruneEvery = 10 * time.Minute
)

func (c *consumer) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until stop; it reports whether it slept the whole d.
func (c *consumer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	}
}

// claimEvery is how often a consumer looks for entries of dead consumers.
func (c *consumer) claimEvery() time.Duration {
	return min(max(c.cfg.ClaimIdle/2, 500*time.Millisecond), 5*time.Second)
}

// run reads until stop. Every few seconds it claims the entries of dead
// consumers (XAUTOCLAIM). Otherwise it reads new entries (XREADGROUP) with
// those the last batch left pending. It retries those from memory after a
// backoff. Reading them again would count deliveries, which mean a consumer
// died. Reads use a context that stop does not cancel. So an entry is never
// delivered to a read nobody sees.
func (c *consumer) run() {
	log := c.d.Log.With("consumer", c.name)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), orderkit.ReleaseTimeout)
		defer cancel()
		if err := c.d.Queue.RemoveConsumer(ctx, c.name); err != nil {
			log.WarnContext(ctx, "remove consumer", "err", err)
		}
		log.InfoContext(ctx, "consumer stopped")
	}()
	ctx := context.Background()
	var backoff time.Duration
	var retry []model.QueuedOrder
	for !c.stopping() {
		began := time.Now()
		if err := c.readFence(ctx); err != nil {
			backoff = c.nextBackoff(backoff)
			log.WarnContext(ctx, "read the loss fence", "err", err, "retry_in", backoff.String())
			c.sleep(backoff)
			continue
		}
		if len(c.recheck) > 0 {
			owned, err := c.recheckHeld(ctx)
			if err != nil {
				backoff = c.nextBackoff(backoff)
				log.WarnContext(ctx, "check entries held when the loss fence moved", "count", len(c.recheck), "err", err, "retry_in", backoff.String())
				c.sleep(backoff)
				continue
			}
			retry = append(retry, owned...)
		}
		if !time.Now().Before(c.nextClaim) {
			c.nextClaim = time.Now().Add(c.claimEvery())
			if retry = c.claim(ctx, retry); c.fenceMoved() {
				continue // read the fence again before any read
			}
		}
		if !time.Now().Before(c.nextPrune) {
			c.nextPrune = time.Now().Add(pruneEvery)
			if n, err := c.d.Queue.PruneConsumers(ctx, pruneIdle); err != nil {
				log.DebugContext(ctx, "prune consumers", "err", err)
			} else if n > 0 {
				log.InfoContext(ctx, "deleted dead consumers with nothing pending", "count", n)
			}
		}
		// Keep only the kept entries still pending with this consumer. Their
		// idle time is reset, so no other consumer claims them during this
		// batch. An unchecked entry is never written.
		var msgs []model.QueuedOrder
		if len(retry) > 0 {
			owned, err := c.touch(ctx, retry)
			if err != nil {
				backoff = c.nextBackoff(backoff)
				log.WarnContext(ctx, "check kept entries", "count", len(retry), "err", err, "retry_in", backoff.String())
				c.sleep(backoff)
				continue
			}
			msgs = owned
		}
		retry = nil
		if room := c.cfg.Batch - len(msgs); room > 0 {
			block := c.cfg.Block
			if len(msgs) > 0 {
				block = -1 // retries are due: do not wait for new entries
			}
			fresh, err := c.d.Queue.ReadNew(ctx, c.name, room, block)
			if err != nil {
				backoff = c.nextBackoff(backoff)
				log.WarnContext(ctx, "read stream", "err", err, "retry_in", backoff.String())
				// The group may be gone with Redis's data: recreate it.
				if gerr := c.d.Queue.EnsureGroup(ctx); gerr != nil {
					log.DebugContext(ctx, "create consumer group", "err", gerr)
				}
				retry = msgs
				c.sleep(backoff)
				continue
			}
			msgs = append(msgs, fresh...)
			if len(fresh) > 0 && len(msgs) < c.cfg.Batch/2 && c.sleep(linger) {
				// A trickle: let a few more orders arrive. Then one
				// transaction, one fsync and one lock round trip write them.
				// Entries read now are not lost on error: a later claim reads
				// them.
				if more, err := c.d.Queue.ReadNew(ctx, c.name, c.cfg.Batch-len(msgs), -1); err == nil {
					msgs = append(msgs, more...)
				}
			}
		}
		if len(msgs) == 0 {
			continue
		}
		if retry = c.process(msgs); c.fenceMoved() {
			c.recheck = append(c.recheck, retry...)
			retry, backoff = nil, 0
		} else if len(retry) > 0 {
			// Touched now too, so they are not claimed during the backoff.
			if owned, err := c.touch(ctx, retry); err != nil {
				log.DebugContext(ctx, "touch pending entries", "err", err)
			} else {
				retry = owned
			}
			backoff = c.nextBackoff(backoff)
			c.sleep(backoff)
		} else {
			backoff = 0
			if len(msgs) >= c.cfg.Batch {
				c.yield(time.Since(began))
			}
		}
	}
}

// readFence reads the loss fence unless the consumer holds its value. It
// runs before any read of entries, so every entry in hand was read under
// c.fence.
func (c *consumer) readFence(ctx context.Context) error {
	if c.fence != "" || c.d.Fence == nil {
		return nil
	}
	f, err := c.d.Fence.Current(ctx)
	if err != nil {
		return err
	}
	c.fence = f
	return nil
}

// fenceMoved reports whether a write found the loss fence moved. The
// entries in hand were then read before a rebuild, maybe from a Redis that
// lost its data. They wait in c.recheck for recheckHeld.
func (c *consumer) fenceMoved() bool { return c.fence == "" && c.d.Fence != nil }

// recheckHeld runs after the fence was read again. It returns the held
// entries still pending with this consumer, which it may write. An entry
// of the Redis that lost its data is pending nowhere: it is dropped, never
// written. One still pending is in the stream the rebuild read, or came
// after it. On error it keeps them all held.
func (c *consumer) recheckHeld(ctx context.Context) ([]model.QueuedOrder, error) {
	owned, err := c.touch(ctx, c.recheck)
	if err != nil {
		return nil, err
	}
	c.recheck = nil
	return owned, nil
}

// touch resets the idle time of the entries kept for a retry. So other
// consumers do not take them for a dead consumer's. It returns those this
// consumer still owns. An entry claimed by another consumer, or settled, is
// dropped and never written. On error it returns msgs unchecked, with the
// error.
func (c *consumer) touch(ctx context.Context, msgs []model.QueuedOrder) ([]model.QueuedOrder, error) {
	owned, err := c.d.Queue.Touch(ctx, c.name, msgs)
	if err != nil {
		return msgs, err
	}
	if len(owned) < len(msgs) {
		keep := make(map[string]bool, len(owned))
		for _, m := range owned {
			keep[m.MsgID] = true
		}
		for _, m := range msgs {
			if !keep[m.MsgID] {
				delete(c.failures, m.MsgID)
			}
		}
		c.d.Log.InfoContext(ctx, "dropped kept entries another consumer took over or settled",
			"consumer", c.name, "count", len(msgs)-len(owned))
	}
	return owned, nil
}

// nextBackoff doubles from 50ms up to 2s.
// It stays under half of ClaimIdle, so retried entries do not look dead.
func (c *consumer) nextBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		d = 25 * time.Millisecond
	}
	return max(min(2*d, 2*time.Second, c.cfg.ClaimIdle/2), time.Millisecond)
}

// claim takes over the entries idle for ClaimIdle and processes them, a page at
// a time. It returns kept, the entries kept for a retry, with those the pages
// left pending. Each page may take up to BatchTimeout, so kept entries are
// touched between pages. Else, through slow pages, a peer would claim them and
// each claim counts a delivery. MaxAttempts would then dead-letter orders whose
// consumers never died.
func (c *consumer) claim(ctx context.Context, kept []model.QueuedOrder) []model.QueuedOrder {
	left := kept
	for page := 0; page < 10 && !c.stopping(); page++ {
		if page > 0 && len(left) > 0 {
			owned, err := c.touch(ctx, left)
			if err != nil {
				c.d.Log.WarnContext(ctx, "check kept entries", "consumer", c.name, "err", err)
				return left
			}
			left = owned
		}
		msgs, next, err := c.d.Queue.Claim(ctx, c.name, c.cfg.ClaimIdle, c.cursor, c.cfg.Batch)
		if err != nil {
			c.d.Log.WarnContext(ctx, "claim pending entries", "consumer", c.name, "err", err)
			return left
		}
		c.cursor = next
		if len(msgs) > 0 {
			c.d.Metrics.Claimed(len(msgs))
			c.d.Log.InfoContext(ctx, "claimed entries of an idle consumer", "consumer", c.name, "count", len(msgs))
			left = append(left, c.process(msgs)...)
			if c.fenceMoved() {
				c.recheck = append(c.recheck, left...)
				return nil
			}
		}
		if next == "0-0" || len(msgs) < c.cfg.Batch {
			break
		}
	}
	return left
}

// process writes a batch and settles each entry. An entry is acknowledged when
// its order is written, dead-lettered when it never can be, and left pending
// for a retry otherwise. It runs until BatchTimeout on a context that stop does
// not cancel. It returns the entries it left pending.
func (c *consumer) process(msgs []model.QueuedOrder) []model.QueuedOrder {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.BatchTimeout)
	defer cancel()
	if c.d.Tracer != nil {
		parents := make([]string, len(msgs))
		for i, m := range msgs {
			parents[i] = m.TraceParent
		}
		var end func()
		ctx, end = c.d.Tracer.StartBatch(ctx, len(msgs), parents)
		defer end()
	}
	c.d.Metrics.BatchRead(len(msgs))
	b := &batch{c: c, ctx: ctx}
	var work []model.QueuedOrder
	for _, m := range msgs {
		switch {
		case m.Deleted:
			b.ack = append(b.ack, m)
		case m.Malformed != "":
			b.malformed(m)
		case m.Deliveries-1 >= int64(c.cfg.MaxAttempts):
			b.deadLetter(m, ReasonDeliveries, int(m.Deliveries))
		default:
			work = append(work, m)
		}
	}
	if d := c.cfg.ConsumerDelay; d > 0 && len(work) > 0 {
		c.sleep(d) // development only: hold the entries pending
	}
	locked, release := b.lockUsers(work)
	defer release()
	b.write(locked)
	if err := c.d.Queue.Ack(ctx, b.ack); err != nil {
		// The orders are written; redelivery finds them and acknowledges.
		c.d.Log.WarnContext(ctx, "acknowledge written orders", "consumer", c.name, "count", len(b.ack), "err", err)
		b.keep(b.ack...)
	}
	return b.left
}
