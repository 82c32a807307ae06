package lock_test

import (
	"testing"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends, backend{
		name: "none",
		new: func(tb testing.TB, _ ...lock.Option) lock.Locker {
			return lock.NewNone()
		},
		sharedAcrossLockers: true,
	})
}
