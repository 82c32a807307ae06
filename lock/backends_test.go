package lock_test

import (
	"testing"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends,
		backend{
			name: "none",
			new: func(tb testing.TB, _ ...lock.Option) lock.Locker {
				return lock.NewNone()
			},
			sharedAcrossLockers: true,
		},
		backend{
			name: "local",
			new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
				return must(tb)(lock.NewLocal(opts...))
			},
			exclusive: true,
		},
		backend{
			name: "simple",
			new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
				return must(tb)(lock.NewSimple(redisClient(tb), opts...))
			},
			exclusive: true, sharedAcrossLockers: true, lease: true,
		},
		backend{
			name: "owner",
			new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
				return must(tb)(lock.NewOwner(redisClient(tb), opts...))
			},
			exclusive: true, sharedAcrossLockers: true, lease: true,
		},
		backend{
			name: "lua",
			new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
				return must(tb)(lock.NewLua(redisClient(tb), opts...))
			},
			exclusive: true, sharedAcrossLockers: true, lease: true, tokens: true,
		},
	)
}

// must returns a function that fails tb on a constructor error.
func must(tb testing.TB) func(lock.Locker, error) lock.Locker {
	return func(l lock.Locker, err error) lock.Locker {
		tb.Helper()
		if err != nil {
			tb.Fatalf("new locker: %v", err)
		}
		return l
	}
}

func init() {
	contractBackends = append(contractBackends, backend{
		name: "reentrant",
		new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
			return must(tb)(lock.NewReentrant(redisClient(tb), opts...))
		},
		exclusive: true, sharedAcrossLockers: true, lease: true, tokens: true,
	})
}
