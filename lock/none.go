package lock

import "context"

// None grants every Obtain at once and excludes nothing. It is the baseline
// that shows what the database's unique key alone does under load.
type None struct{}

var _ Locker = (*None)(nil)

// NewNone returns the no-op locker.
func NewNone() *None { return &None{} }

// Name returns "none".
func (*None) Name() string { return "none" }

// Obtain always succeeds unless ctx has already ended.
func (*None) Obtain(ctx context.Context, key string) (Lock, error) {
	if ctx.Err() != nil {
		return nil, waitErr(ctx)
	}
	return noneLock{key: key}, nil
}

type noneLock struct{ key string }

func (l noneLock) Key() string                 { return l.key }
func (noneLock) Token() (int64, bool)          { return 0, false }
func (noneLock) Release(context.Context) error { return nil }
