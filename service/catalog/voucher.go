package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"seckill/model"
)

// PublishInput is a seckill voucher to publish, already parsed.
type PublishInput struct {
	ShopID      int64
	Title       string
	SubTitle    string
	Rules       string
	PayValue    int64
	ActualValue int64
	Type        int
	Stock       int
	BeginTime   time.Time
	EndTime     time.Time
	// StockBuckets splits the voucher's Redis stock in that many buckets
	// (async mode, 1 to model.MaxStockBuckets); 0 means the default
	// (SetDefaultStockBuckets, else 1).
	StockBuckets int
	// WaitingRoom gives the voucher a waiting room; nil means the
	// default (SetDefaultWaitingRoom).
	WaitingRoom *bool
	// UseDays (ISO weekdays, 1 Monday to 7 Sunday) and UseUntil (the last
	// day, YYYY-MM-DD) bound the voucher's redemption at the shop; none
	// means no bound (docs/redemption.md).
	UseDays  []int
	UseUntil string
}

// Vouchers publishes and lists vouchers.
type Vouchers struct {
	store VoucherStore
	shops ShopFinder
	now   func() time.Time
	// published is called after a voucher is written (async mode loads its
	// stock into Redis there); nil in sync mode.
	published      func(ctx context.Context, sv *model.SeckillVoucher) error
	defaultBuckets int  // SetDefaultStockBuckets
	defaultRoom    bool // SetDefaultWaitingRoom
}

// NewVouchers returns a Vouchers service. shops tells which shops exist (a
// voucher must name one); now is the clock (time.Now in production).
func NewVouchers(store VoucherStore, shops ShopFinder, now func() time.Time) *Vouchers {
	return &Vouchers{store: store, shops: shops, now: now}
}

// SetDefaultStockBuckets sets the buckets of a voucher published without
// stockBuckets (SECKILL_STOCK_BUCKETS; 1 to model.MaxStockBuckets).
func (s *Vouchers) SetDefaultStockBuckets(n int) { s.defaultBuckets = n }

// SetDefaultWaitingRoom sets whether a voucher published without
// waitingRoom gets a waiting room (SECKILL_WAITING_ROOM).
func (s *Vouchers) SetDefaultWaitingRoom(on bool) { s.defaultRoom = on }

// OnPublished sets a hook called after a voucher is stored.
func (s *Vouchers) OnPublished(f func(ctx context.Context, sv *model.SeckillVoucher) error) {
	s.published = f
}

// Validate checks in against the publishing rules; the error names the field.
func (s *Vouchers) Validate(in PublishInput) error {
	switch {
	case in.ShopID <= 0:
		return model.InvalidArgument("shopId", "must be a positive number")
	case strings.TrimSpace(in.Title) == "":
		return model.InvalidArgument("title", "required")
	case utf8.RuneCountInString(in.Title) > 255:
		return model.InvalidArgument("title", "at most 255 characters")
	case utf8.RuneCountInString(in.SubTitle) > 255:
		return model.InvalidArgument("subTitle", "at most 255 characters")
	case utf8.RuneCountInString(in.Rules) > 1024:
		return model.InvalidArgument("rules", "at most 1024 characters")
	case in.PayValue < 0:
		return model.InvalidArgument("payValue", "must be ≥ 0")
	case in.ActualValue <= 0:
		return model.InvalidArgument("actualValue", "must be positive")
	case in.PayValue > in.ActualValue:
		return model.InvalidArgument("payValue", "must not exceed actualValue (the buyer pays at most what the voucher is worth)")
	case in.Type != model.VoucherTypeSeckill:
		return model.InvalidArgument("type", "must be 1 (seckill)")
	case in.Stock < 1:
		return model.InvalidArgument("stock", "must be ≥ 1")
	case in.Stock > 100_000_000:
		return model.InvalidArgument("stock", "must be ≤ 100000000")
	case in.StockBuckets < 0 || in.StockBuckets > model.MaxStockBuckets:
		return model.InvalidArgument("stockBuckets", fmt.Sprintf("must be from 1 to %d", model.MaxStockBuckets))
	case in.BeginTime.IsZero():
		return model.InvalidArgument("beginTime", "required")
	case in.EndTime.IsZero():
		return model.InvalidArgument("endTime", "required")
	case !storable(in.BeginTime):
		return model.InvalidArgument("beginTime", timeRange)
	case !storable(in.EndTime):
		return model.InvalidArgument("endTime", timeRange)
	case !in.EndTime.After(in.BeginTime):
		return model.InvalidArgument("endTime", "must be after beginTime")
	case !in.EndTime.After(s.now()):
		return model.InvalidArgument("endTime", "must be in the future")
	}
	return nil
}

// Voucher times must lie in years MinYear to MaxYear, in UTC and in the local
// zone. A MySQL DATETIME stores years 1000 to 9999 with no zone. The driver
// first converts a time to the zone of its DSN. A bound on both keeps every
// time storable, and a listed voucher's JSON encodable.
const (
	MinYear = 2000
	MaxYear = 9999
)

const timeRange = "must be in years 2000 to 9999 (in UTC and in the server's zone)"

// storable reports whether t is within the years of MinYear to MaxYear in
// UTC and in the local zone.
func storable(t time.Time) bool {
	for _, y := range []int{t.UTC().Year(), t.In(time.Local).Year()} {
		if y < MinYear || y > MaxYear {
			return false
		}
	}
	return true
}

// Publish validates and stores a seckill voucher and returns its id. A
// shopId that names no shop is an input error of the field shopId that
// also matches model.ErrShopNotFound. (Shops are never deleted, so the
// check before the insert holds after it.)
func (s *Vouchers) Publish(ctx context.Context, in PublishInput) (int64, error) {
	in.BeginTime, in.EndTime = model.SaleTime(in.BeginTime), model.SaleTime(in.EndTime)
	if err := s.Validate(in); err != nil {
		return 0, err
	}
	if _, err := s.shops.GetShop(ctx, in.ShopID); err != nil {
		if errors.Is(err, model.ErrShopNotFound) {
			return 0, fmt.Errorf("%w: %w", model.InvalidArgument("shopId", "no shop has this id"), model.ErrShopNotFound)
		}
		return 0, err
	}
	days, err := model.ParseUseDays(in.UseDays)
	if err != nil {
		return 0, err
	}
	until, err := model.ParseUseUntil(in.UseUntil)
	if err != nil {
		return 0, err
	}
	now := s.now()
	v := &model.Voucher{
		ShopID: in.ShopID, Title: in.Title, SubTitle: in.SubTitle, Rules: in.Rules,
		PayValue: in.PayValue, ActualValue: in.ActualValue, Type: in.Type, Status: 1,
		UseDays: days, UseUntil: until, CreateTime: now, UpdateTime: now,
	}
	buckets := in.StockBuckets
	if buckets == 0 {
		buckets = max(s.defaultBuckets, 1)
	}
	sv := &model.SeckillVoucher{
		Stock: in.Stock, InitialStock: in.Stock, BeginTime: in.BeginTime, EndTime: in.EndTime,
		StockBuckets: buckets, WaitingRoom: s.defaultRoom, CreateTime: now, UpdateTime: now,
	}
	if in.WaitingRoom != nil {
		sv.WaitingRoom = *in.WaitingRoom
	}
	if err := s.store.CreateSeckill(ctx, v, sv); err != nil {
		return 0, err
	}
	if s.published != nil {
		if err := s.published(ctx, sv); err != nil {
			return 0, err
		}
	}
	return v.ID, nil
}

// List returns the vouchers of a shop; model.ErrShopNotFound when no shop
// has the id (asked only when the list is empty: shops are never deleted).
func (s *Vouchers) List(ctx context.Context, shopID int64) ([]model.SeckillVoucherInfo, error) {
	if shopID <= 0 {
		return nil, model.InvalidArgument("shopId", "must be a positive number")
	}
	list, err := s.store.ListByShop(ctx, shopID)
	if err != nil || len(list) > 0 {
		return list, err
	}
	if _, err := s.shops.GetShop(ctx, shopID); err != nil {
		return nil, err
	}
	return list, nil
}
