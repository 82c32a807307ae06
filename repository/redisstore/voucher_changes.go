package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// VoucherChanges tells every instance of a voucher an admin edited or
// closed, over Redis Pub/Sub (VoucherChangesChannel). Pub/Sub
// keeps nothing for a subscriber that is away, so a listener treats each
// (re)subscription as "anything may have changed".
type VoucherChanges struct{ rdb redis.UniversalClient }

// NewVoucherChanges returns the voucher changes on rdb.
func NewVoucherChanges(rdb redis.UniversalClient) *VoucherChanges { return &VoucherChanges{rdb: rdb} }

// Publish names the voucher to every listening instance.
func (c *VoucherChanges) Publish(ctx context.Context, voucherID int64) error {
	return redisErr(c.rdb.Publish(ctx, VoucherChangesChannel, voucherID).Err())
}

// Listener is a running subscription of Listen.
type Listener struct {
	ps   *redis.PubSub
	done chan struct{}
	once sync.Once
}

// Listen subscribes and returns once Redis confirmed the subscription.
// Then, until Close, it calls changed with each voucher named, and all
// after each re-subscription (go-redis subscribes again after a lost
// connection: what was published meanwhile is lost).
func (c *VoucherChanges) Listen(ctx context.Context, changed func(voucherID int64), all func()) (*Listener, error) {
	ps := c.rdb.Subscribe(ctx, VoucherChangesChannel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("subscribe %s: %w", VoucherChangesChannel, redisErr(err))
	}
	l := &Listener{ps: ps, done: make(chan struct{})}
	ch := ps.ChannelWithSubscriptions()
	go func() {
		defer close(l.done)
		for m := range ch {
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					all()
				}
			case *redis.Message:
				if id, err := strconv.ParseInt(m.Payload, 10, 64); err == nil && id > 0 {
					changed(id)
				}
			}
		}
	}()
	return l, nil
}

// Close ends the subscription and waits until no callback runs.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.ps.Close()
		if errors.Is(err, redis.ErrClosed) {
			err = nil
		}
	})
	<-l.done
	return err
}
