package catalog

import (
	"context"
	"time"

	"seckill/model"
)

// VoucherAdminStore reads, edits and closes vouchers.
type VoucherAdminStore interface {
	// GetInfo returns the voucher with its seckill fields, or
	// model.ErrVoucherNotFound.
	GetInfo(ctx context.Context, voucherID int64) (*model.SeckillVoucherInfo, error)
	// UpdateSeckill replaces the content of a voucher not closed whose sale has
	// not started. Otherwise it returns model.ErrVoucherNotEditable. It never
	// sets the initial stock below the units sold.
	UpdateSeckill(ctx context.Context, voucherID int64, e model.VoucherEdit, now time.Time) error
	// CloseSeckill sets the voucher closed and ends its window at now.
	CloseSeckill(ctx context.Context, voucherID int64, now time.Time) error
}

// VoucherAdmin reads one voucher, edits one before its sale, and closes
// one. A voucher is never deleted: its orders keep pointing to it.
type VoucherAdmin struct {
	store    VoucherAdminStore
	vouchers *Vouchers // the publishing rules
	now      func() time.Time
	changed  func(ctx context.Context, voucherID int64) error
}

// NewVoucherAdmin returns a VoucherAdmin. vouchers holds the publishing rules
// an edit must meet. changed runs after each edit or close; nil does nothing.
// It drops cached copies and, in async mode, rebuilds the voucher's Redis
// state.
func NewVoucherAdmin(store VoucherAdminStore, vouchers *Vouchers, now func() time.Time,
	changed func(ctx context.Context, voucherID int64) error) *VoucherAdmin {
	return &VoucherAdmin{store: store, vouchers: vouchers, now: now, changed: changed}
}

// Get returns the voucher with its seckill fields.
func (s *VoucherAdmin) Get(ctx context.Context, voucherID int64) (*model.SeckillVoucherInfo, error) {
	if voucherID <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	return s.store.GetInfo(ctx, voucherID)
}

// Edit replaces the voucher's content. It meets the publishing rules, and
// the voucher's sale must not have started (model.ErrVoucherNotEditable):
// a sale under way is only ever closed.
func (s *VoucherAdmin) Edit(ctx context.Context, voucherID int64, e model.VoucherEdit) error {
	cur, err := s.Get(ctx, voucherID)
	if err != nil {
		return err
	}
	e.BeginTime, e.EndTime = model.SaleTime(e.BeginTime), model.SaleTime(e.EndTime)
	if err := s.vouchers.Validate(PublishInput{
		ShopID: cur.ShopID, Title: e.Title, SubTitle: e.SubTitle, Rules: e.Rules,
		PayValue: e.PayValue, ActualValue: e.ActualValue, Type: model.VoucherTypeSeckill,
		Stock: e.Stock, BeginTime: e.BeginTime, EndTime: e.EndTime,
	}); err != nil {
		return err
	}
	if err := s.store.UpdateSeckill(ctx, voucherID, e, s.now()); err != nil {
		return err
	}
	return s.notify(ctx, voucherID)
}

// Close ends the voucher's sale now and marks it closed; its orders stay.
// Closing a closed voucher is no error.
func (s *VoucherAdmin) Close(ctx context.Context, voucherID int64) error {
	if voucherID <= 0 {
		return model.InvalidArgument("id", "must be a positive number")
	}
	// Whole seconds, as the end is stored: a database that rounds (MySQL)
	// would otherwise keep an end up to half a second after now.
	if err := s.store.CloseSeckill(ctx, voucherID, model.SaleTime(s.now())); err != nil {
		return err
	}
	return s.notify(ctx, voucherID)
}

func (s *VoucherAdmin) notify(ctx context.Context, voucherID int64) error {
	if s.changed == nil {
		return nil
	}
	return s.changed(ctx, voucherID)
}
