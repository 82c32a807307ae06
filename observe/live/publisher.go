package live

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"time"

	"seckill/model"
)

// Store keeps the live counters every instance publishes and the dashboards
// read (redisstore.LiveStats: Redis).
type Store interface {
	// Publish adds deltas to the vouchers' shared counters and records inst
	// as alive, in one round trip, all or nothing.
	Publish(ctx context.Context, inst model.LiveInstance, deltas map[int64]model.LiveCounts) error
	// Retire removes the instance from the live ones.
	Retire(ctx context.Context, instanceID string) error
	// Instances returns the instances that published within InstanceTTL.
	Instances(ctx context.Context) ([]model.LiveInstance, error)
	// Counts returns a voucher's shared counters (empty when none).
	Counts(ctx context.Context, voucherID int64) (model.LiveCounts, error)
	// History returns a voucher's answers by code per second, as Publish
	// added them at each publication's second (inst.Seen), in time order.
	History(ctx context.Context, voucherID int64) (model.LiveHistory, error)
}

// Publishing defaults.
const (
	// DefaultInterval is how often a Publisher publishes: a quarter second,
	// so that a dashboard's one-second rates see four publications of
	// each instance, not one or two.
	DefaultInterval = 250 * time.Millisecond
	// InstanceTTL is how long an instance counts as alive after it
	// published last.
	InstanceTTL = 3 * time.Second
	// ActiveFor is how long after its last answer a voucher is listed
	// among an instance's active ones (model.LiveInstance.Vouchers), and
	// MaxActive how many are listed at most.
	ActiveFor = 10 * time.Second
	MaxActive = 16
	// flushTimeout bounds one publication; retireTimeout the last one at
	// stop.
	flushTimeout  = time.Second
	retireTimeout = 2 * time.Second
)

// PublisherConfig describes the instance and how often it publishes.
type PublisherConfig struct {
	LockMode, OrderMode string
	// Interval between publications. Default DefaultInterval.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Publisher publishes one process's Recorder to the Store, every Interval.
type Publisher struct {
	rec      *Recorder
	store    Store
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time
	inst     model.LiveInstance

	// Run's state (one goroutine).
	sent    map[int64]*published
	retired map[int64]*published
	// gone is the answers of vouchers dropped from the Recorder, for the
	// instance's request total.
	gone    int64
	failing bool
}

// published is what was published of one voucher's counters.
type published struct {
	c       *counters
	values  [nFields]int64
	changed time.Time
}

// NewPublisher returns a Publisher of rec to store under a fresh instance
// id (host name, process id and random bytes).
func NewPublisher(rec *Recorder, store Store, cfg PublisherConfig, log *slog.Logger) *Publisher {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Publisher{
		rec: rec, store: store, log: log, interval: cfg.Interval, now: cfg.Now,
		inst: model.LiveInstance{ID: newInstanceID(), LockMode: cfg.LockMode, OrderMode: cfg.OrderMode, Started: cfg.Now()},
		sent: map[int64]*published{}, retired: map[int64]*published{},
	}
}

func newInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "seckill"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return host + "-" + hex.EncodeToString(b)
}

// ID is the instance's id.
func (p *Publisher) ID() string { return p.inst.ID }

// Run publishes at once and every interval until ctx ends. Then it publishes
// once more and retires the instance, on a bounded context detached from
// ctx. So no count is lost at a graceful stop, and dashboards drop the
// instance at once.
func (p *Publisher) Run(ctx context.Context) {
	flush := func() {
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		defer cancel()
		p.Flush(fctx)
	}
	flush() // the instance shows at once
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
			defer cancel()
			p.Flush(dctx)
			if err := p.store.Retire(dctx, p.inst.ID); err != nil {
				p.log.WarnContext(dctx, "live stats: retire instance", "instance", p.inst.ID, "err", err)
			}
			return
		case <-t.C:
			flush()
		}
	}
}

// Flush publishes the counts observed since the last successful publication.
// A failed one is retried with the next, so its counts are kept. A
// publication whose reply was lost after Redis applied it is added again.
// The dashboard may then over-count by one interval; the audit never does.
// Flush is not safe for concurrent use; Run calls it.
func (p *Publisher) Flush(ctx context.Context) {
	now := p.now()
	all := map[int64]model.LiveCounts{}
	total := p.gone
	add := func(id int64, pub *published) [nFields]int64 {
		cur := pub.c.values()
		total += answers(cur)
		if d := deltas(cur, pub.values); d != nil {
			if prev := all[id]; prev != nil {
				for k, v := range d {
					prev[k] += v
				}
			} else {
				all[id] = d
			}
		}
		return cur
	}
	counts := map[int64][nFields]int64{}
	p.rec.each(func(id int64, c *counters) {
		pub := p.sent[id]
		if pub == nil || pub.c != c {
			pub = &published{c: c, changed: now}
			p.sent[id] = pub
		}
		counts[id] = add(id, pub)
	})
	retiredCounts := map[int64][nFields]int64{}
	for id, pub := range p.retired {
		retiredCounts[id] = add(id, pub)
	}
	inst := p.inst
	inst.Seen, inst.Requests = now, total
	inst.Vouchers = p.active(now, all)
	if err := p.store.Publish(ctx, inst, all); err != nil {
		if !p.failing {
			p.log.WarnContext(ctx, "live stats: publish failed (retried every interval)", "instance", p.inst.ID, "err", err)
			p.failing = true
		}
		return
	}
	if p.failing {
		p.log.InfoContext(ctx, "live stats: publishing again", "instance", p.inst.ID)
		p.failing = false
	}
	for id, cur := range retiredCounts {
		p.gone += answers(cur)
		delete(p.retired, id)
	}
	for id, cur := range counts {
		pub := p.sent[id]
		if cur != pub.values {
			pub.values, pub.changed = cur, now
			continue
		}
		if now.Sub(pub.changed) >= IdleAfter {
			// Idle: drop it from the Recorder. An answer counted on it
			// after this publication is published once more, with the
			// next one.
			if c := p.rec.forget(id); c != nil {
				p.retired[id] = &published{c: c, values: pub.values, changed: now}
			}
			delete(p.sent, id)
		}
	}
	for id := range p.sent {
		if _, ok := counts[id]; !ok {
			delete(p.sent, id)
		}
	}
}

// active returns the vouchers answered for within ActiveFor (counted in
// this publication, or changed in one of the last), the most recent first,
// at most MaxActive.
func (p *Publisher) active(now time.Time, deltas map[int64]model.LiveCounts) []int64 {
	type seen struct {
		id int64
		at time.Time
	}
	var list []seen
	for id, pub := range p.sent {
		switch {
		case deltas[id] != nil:
			list = append(list, seen{id, now})
		case now.Sub(pub.changed) < ActiveFor && pub.values != [nFields]int64{}:
			list = append(list, seen{id, pub.changed})
		}
	}
	slices.SortFunc(list, func(a, b seen) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	out := make([]int64, 0, min(len(list), MaxActive))
	for _, s := range list[:min(len(list), MaxActive)] {
		out = append(out, s.id)
	}
	return out
}

// answers sums the answer codes of a voucher's counters.
func answers(v [nFields]int64) int64 {
	var n int64
	for i := 0; i < nCodes; i++ {
		n += v[i]
	}
	return n
}
