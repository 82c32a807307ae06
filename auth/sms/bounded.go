package sms

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Options bound the sends of Bounded. Zero fields take the defaults.
type Options struct {
	// Attempts is the most tries of one code, temporary failures only
	// retried. Default 3.
	Attempts int
	// AttemptTimeout bounds one try. Default 1s.
	AttemptTimeout time.Duration
	// Total bounds all tries of one code, backoff included. Default 2s.
	Total time.Duration
	// Backoff is the pause before the second try, doubled after. Default 100ms.
	Backoff time.Duration
	// Concurrent is the most sends in flight; one more fails at once.
	// Default 32.
	Concurrent int
}

// Defaults of Options.
const (
	DefaultAttempts       = 3
	DefaultAttemptTimeout = time.Second
	DefaultTotal          = 2 * time.Second
	DefaultBackoff        = 100 * time.Millisecond
	DefaultConcurrent     = 32
)

func (o Options) withDefaults() Options {
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.Total <= 0 {
		o.Total = DefaultTotal
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Concurrent <= 0 {
		o.Concurrent = DefaultConcurrent
	}
	return o
}

// Bounded sends through another Sender within its own budget: a slot of
// its own semaphore, never a resource the purchase path uses. It retries
// temporary failures within Total and logs each failed try.
type Bounded struct {
	next  Sender
	name  string
	o     Options
	slots chan struct{}
	log   *slog.Logger
}

// NewBounded bounds next, named name in the log.
func NewBounded(next Sender, name string, o Options, log *slog.Logger) *Bounded {
	o = o.withDefaults()
	return &Bounded{next: next, name: name, o: o, slots: make(chan struct{}, o.Concurrent), log: log}
}

// SendCode delivers code, or returns an *Error. It leaves a quarter of
// ctx's remaining time to the caller, who still has to store the code.
func (b *Bounded) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	select {
	case b.slots <- struct{}{}:
		defer func() { <-b.slots }()
	default:
		return &Error{Reason: reasonBusy, Temporary: true, Err: errors.New("every send slot is taken")}
	}
	total := b.o.Total
	if d, ok := ctx.Deadline(); ok {
		total = min(total, time.Until(d)*3/4)
	}
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	wait := b.o.Backoff
	var err error
	for try := 1; try <= b.o.Attempts; try++ {
		err = b.try(ctx, phone, code, ttl)
		if err == nil {
			return nil
		}
		var se *Error
		if !errors.As(err, &se) {
			se = &Error{Reason: reasonFailed, Err: err}
			err = se
		}
		b.log.WarnContext(ctx, "login code send failed", "sender", b.name, "try", try, "temporary", se.Temporary, "err", err)
		if !se.Temporary || try == b.o.Attempts {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
	return err
}

// try is one attempt, bounded by AttemptTimeout.
func (b *Bounded) try(ctx context.Context, phone, code string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, b.o.AttemptTimeout)
	defer cancel()
	return b.next.SendCode(ctx, phone, code, ttl)
}
