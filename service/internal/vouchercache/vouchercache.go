// Package vouchercache is the kernel the sale, the async sale and the
// waiting room share: each voucher's sale window and a sold-out flag, kept
// in memory so that the refusals of a flash sale cost no database read.
package vouchercache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"seckill/model"
)

// Store reads a voucher with its seckill fields; model.ErrVoucherNotFound
// for an unknown voucher.
type Store interface {
	GetSeckill(ctx context.Context, voucherID int64) (*model.SeckillVoucher, error)
}

// Cache keeps each voucher's sale window and a sold-out flag.
// The window never changes once published.
// So the refusals of a flash sale cost no database read.
// Concurrent misses of one voucher share a single load.
type Cache struct {
	store Store
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	entries map[int64]*Entry
}

// Entry is one cached voucher.
type Entry struct {
	ready chan struct{} // closed when loaded
	err   error
	// Voucher is the voucher as loaded; read it only.
	Voucher model.SeckillVoucher
	loaded  time.Time
	// soldOutAt is when the voucher was last seen sold out (unix
	// nanoseconds; 0: not seen).
	soldOutAt atomic.Int64
}

// soldOutTTL is how long a voucher seen sold out is refused without asking the
// store. Stock can come back: an async dead letter gives its unit back. So the
// flag lasts a second; then one request goes through and sets it again.
const soldOutTTL = time.Second

// MarkSoldOut records that the voucher was seen sold out at now.
func (v *Entry) MarkSoldOut(now time.Time) { v.soldOutAt.Store(now.UnixNano()) }

// SoldOut reports whether the voucher was seen sold out within soldOutTTL
// of now.
func (v *Entry) SoldOut(now time.Time) bool {
	at := v.soldOutAt.Load()
	d := now.UnixNano() - at
	// A wall clock stepped back (d < 0) ends the flag rather than
	// stretching it until the clock catches up.
	return at != 0 && d >= 0 && d < int64(soldOutTTL)
}

// New returns a cache that keeps a loaded voucher for ttl.
func New(store Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{store: store, ttl: ttl, now: now, entries: make(map[int64]*Entry)}
}

// Get returns the cached voucher, loading it on a miss or after the TTL.
// Load errors are not cached.
func (c *Cache) Get(ctx context.Context, id int64) (*Entry, error) {
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
		e = &Entry{ready: make(chan struct{})}
		c.entries[id] = e
		c.mu.Unlock()
		sv, err := c.store.GetSeckill(ctx, id)
		if err == nil {
			e.Voucher = *sv
			if sv.Stock <= 0 {
				e.MarkSoldOut(c.now())
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

// Refusal is CheckWindowAndStock's refusal of the voucher now from what
// the cache holds, without loading it: nil for a voucher not cached, still
// loading or past the TTL.
func (c *Cache) Refusal(id int64) error {
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
	return e.Refusal(now)
}

// Forget drops the cached voucher: the next request reads it again. A
// voucherID of 0 drops every cached voucher.
func (c *Cache) Forget(voucherID int64) {
	c.mu.Lock()
	if voucherID == 0 {
		clear(c.entries)
	} else {
		delete(c.entries, voucherID)
	}
	c.mu.Unlock()
}

// CheckWindowAndStock is the flow's first step, in both modes, without any
// lock. It refuses, from the cache, a voucher outside its sale window or
// known to be sold out.
func CheckWindowAndStock(ctx context.Context, cache *Cache, clock func() time.Time, voucherID int64) (*Entry, error) {
	v, err := cache.Get(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	if err := v.Refusal(clock()); err != nil {
		return nil, err
	}
	return v, nil
}

// Refusal is why a purchase of the voucher at now is refused from memory:
// outside its window, or seen sold out within soldOutTTL; nil when it is not.
func (v *Entry) Refusal(now time.Time) error {
	switch {
	case now.Before(v.Voucher.BeginTime):
		return model.ErrSeckillNotStarted
	case !now.Before(v.Voucher.EndTime):
		return model.ErrSeckillEnded
	case v.SoldOut(now):
		return model.ErrSoldOut
	}
	return nil
}
