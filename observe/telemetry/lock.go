package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"seckill/lock"
)

// Locker returns l with a span around each obtain and release, the mode
// (SECKILL_LOCK_MODE) and the key as attributes. A lock.BatchLocker stays
// one, its batch calls traced as one span each.
func (t *Tracing) Locker(l lock.Locker) lock.Locker {
	traced := &tracedLocker{inner: l, t: t, mode: attribute.String("seckill.lock.mode", l.Name())}
	if b, ok := l.(lock.BatchLocker); ok {
		return &tracedBatchLocker{tracedLocker: traced, batch: b}
	}
	return traced
}

type tracedLocker struct {
	inner lock.Locker
	t     *Tracing
	mode  attribute.KeyValue
}

var (
	_ lock.Locker      = (*tracedLocker)(nil)
	_ lock.BatchLocker = (*tracedBatchLocker)(nil)
)

func (l *tracedLocker) Name() string { return l.inner.Name() }

func (l *tracedLocker) start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !recording(ctx) {
		return l.t.tracer.Start(ctx, name)
	}
	return l.t.tracer.Start(ctx, name, trace.WithAttributes(append(attrs, l.mode)...))
}

// end records err on span (a lock not obtained is an answer, not an
// error) and ends it.
func end(span trace.Span, err error) {
	switch {
	case err == nil:
	case lockRefused(err):
		span.SetAttributes(attribute.Bool("seckill.lock.obtained", false))
	default:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func lockRefused(err error) bool { return errors.Is(err, lock.ErrNotObtained) }

func (l *tracedLocker) Obtain(ctx context.Context, key string) (lock.Lock, error) {
	ctx, span := l.start(ctx, "lock.obtain", attribute.String("seckill.lock.key", key))
	lk, err := l.inner.Obtain(ctx, key)
	end(span, err)
	if err != nil {
		return nil, err
	}
	return &tracedLock{Lock: lk, l: l}, nil
}

// tracedLock is an obtained lock whose release is traced.
type tracedLock struct {
	lock.Lock
	l *tracedLocker
}

func (k *tracedLock) Release(ctx context.Context) error {
	ctx, span := k.l.start(ctx, "lock.release", attribute.String("seckill.lock.key", k.Key()))
	err := k.Lock.Release(ctx)
	end(span, err)
	return err
}

type tracedBatchLocker struct {
	*tracedLocker
	batch lock.BatchLocker
}

func (l *tracedBatchLocker) ObtainAll(ctx context.Context, keys []string) ([]lock.Lock, []error) {
	ctx, span := l.start(ctx, "lock.obtain_all", attribute.Int("seckill.lock.keys", len(keys)))
	locks, errs := l.batch.ObtainAll(ctx, keys)
	obtained := 0
	for i, lk := range locks {
		if lk != nil {
			locks[i] = &tracedLock{Lock: lk, l: l.tracedLocker}
			obtained++
		}
	}
	span.SetAttributes(attribute.Int("seckill.lock.obtained_count", obtained))
	span.End()
	return locks, errs
}

func (l *tracedBatchLocker) ReleaseAll(ctx context.Context, locks []lock.Lock) []error {
	ctx, span := l.start(ctx, "lock.release_all", attribute.Int("seckill.lock.keys", len(locks)))
	defer span.End()
	inner := make([]lock.Lock, len(locks))
	for i, lk := range locks {
		if traced, ok := lk.(*tracedLock); ok {
			inner[i] = traced.Lock
		} else {
			inner[i] = lk
		}
	}
	return l.batch.ReleaseAll(ctx, inner)
}
