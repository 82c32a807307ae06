package app

import (
	"context"

	"seckill/repository/redisstore"
)

// voucherChangeListener drops this instance's cached copy of each voucher
// another instance edited or closed, as soon as Redis Pub/Sub tells it,
// and every copy after a lost subscription (what was published meanwhile
// is lost). So an edit that turns the waiting room on, moves the window
// or changes the stock, and a close, reach every instance before the sale
// reads them (docs/waiting-room.md).
type voucherChangeListener struct {
	changes *redisstore.VoucherChanges
	forget  func(voucherID int64)
	l       *redisstore.Listener
}

func newVoucherChangeListener(changes *redisstore.VoucherChanges, forget func(voucherID int64)) *voucherChangeListener {
	return &voucherChangeListener{changes: changes, forget: forget}
}

// Name is "voucher changes".
func (*voucherChangeListener) Name() string { return "voucher changes" }

// Start subscribes and returns once Redis confirmed it: a change published
// after the app serves is heard.
func (v *voucherChangeListener) Start(ctx context.Context) error {
	if v.l != nil {
		return errRunning
	}
	l, err := v.changes.Listen(context.WithoutCancel(ctx), v.forget, func() { v.forget(0) })
	if err != nil {
		return err
	}
	v.l = l
	return nil
}

// Stop ends the subscription.
func (v *voucherChangeListener) Stop(context.Context) error {
	if v.l == nil {
		return nil
	}
	err := v.l.Close()
	v.l = nil
	return err
}

func (v *voucherChangeListener) running() bool { return v.l != nil }
