package service

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"seckill/model"
)

// voucherCache keeps each voucher's sale window and a sold-out flag.
// The window never changes once published.
// So the refusals of a flash sale cost no database read.
// Concurrent misses of one voucher share a single load.
type voucherCache struct {
	store VoucherStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	entries map[int64]*cachedVoucher
}

type cachedVoucher struct {
	ready  chan struct{} // closed when loaded
	err    error
	sv     model.SeckillVoucher
	loaded time.Time
	// soldOutAt is when the voucher was last seen sold out (unix
	// nanoseconds; 0: not seen).
	soldOutAt atomic.Int64
}

// soldOutTTL is how long a voucher seen sold out is refused without asking the
// store. Stock can come back: an async dead letter gives its unit back. So the
// flag lasts a second; then one request goes through and sets it again.
const soldOutTTL = time.Second

// markSoldOut records that the voucher was seen sold out at now.
func (v *cachedVoucher) markSoldOut(now time.Time) { v.soldOutAt.Store(now.UnixNano()) }

// soldOut reports whether the voucher was seen sold out within soldOutTTL
// of now.
func (v *cachedVoucher) soldOut(now time.Time) bool {
	at := v.soldOutAt.Load()
	d := now.UnixNano() - at
	// A wall clock stepped back (d < 0) ends the flag rather than
	// stretching it until the clock catches up.
	return at != 0 && d >= 0 && d < int64(soldOutTTL)
}

func newVoucherCache(store VoucherStore, ttl time.Duration, now func() time.Time) *voucherCache {
	return &voucherCache{store: store, ttl: ttl, now: now, entries: make(map[int64]*cachedVoucher)}
}

// get returns the cached voucher, loading it on a miss or after the TTL.
// Load errors are not cached.
func (c *voucherCache) get(ctx context.Context, id int64) (*cachedVoucher, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	if ok {
		select {
		case <-e.ready:
			if e.err != nil || c.now().Sub(e.loaded) > c.ttl {
				ok = false
			}
		default:
		}
	}
	if !ok {
		e = &cachedVoucher{ready: make(chan struct{})}
		c.entries[id] = e
		c.mu.Unlock()
		sv, err := c.store.GetSeckill(ctx, id)
		if err == nil {
			e.sv = *sv
			if sv.Stock <= 0 {
				e.markSoldOut(c.now())
			}
		}
		e.err, e.loaded = err, c.now()
		close(e.ready)
		if err != nil {
			c.mu.Lock()
			if c.entries[id] == e {
				delete(c.entries, id)
			}
			c.mu.Unlock()
		}
		return e, err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		// Loaded: not even ctx.Done (it makes a channel).
		return e, e.err
	default:
	}
	select {
	case <-e.ready:
		return e, e.err
	case <-ctx.Done():
		return nil, model.Unavailable(ctx.Err())
	}
}

// refusal is checkWindowAndStock's refusal of the voucher now from what
// the cache holds, without loading it: nil for a voucher not cached, still
// loading or past the TTL.
func (c *voucherCache) refusal(id int64) error {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-e.ready:
	default:
		return nil
	}
	now := c.now()
	if e.err != nil || now.Sub(e.loaded) > c.ttl {
		return nil
	}
	return e.refusal(now)
}

// forget drops the cached voucher: the next request reads it again.
func (c *voucherCache) forget(id int64) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

// forgetAll drops every cached voucher.
func (c *voucherCache) forgetAll() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// forget drops c's copy of the voucher, or every copy when voucherID is 0.
func forget(c *voucherCache, voucherID int64) {
	if voucherID == 0 {
		c.forgetAll()
		return
	}
	c.forget(voucherID)
}
