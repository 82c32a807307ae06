package app

import "seckill/service/sale"

// expirySweeper expires the unpaid orders past their pay window. In async
// mode it gives their units back to Redis too. Every instance runs one.
// They share the work through the database's row locks.
type expirySweeper struct{ loop }

func newExpirySweeper(l *sale.Lifecycle) *expirySweeper {
	return &expirySweeper{loop{run: l.Run}}
}

// Name is "expiry sweeper".
func (*expirySweeper) Name() string { return "expiry sweeper" }
