package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/servicetest"
)

var voucherNow = time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)

func validInput() PublishInput {
	return PublishInput{
		ShopID: 1, Title: "100 for 80", SubTitle: "weekdays", Rules: "one per user",
		PayValue: 8000, ActualValue: 10000, Type: model.VoucherTypeSeckill, Stock: 100,
		BeginTime: voucherNow.Add(time.Hour), EndTime: voucherNow.Add(2 * time.Hour),
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*PublishInput)
		wantField string // "" means valid
	}{
		{"valid", func(*PublishInput) {}, ""},
		{"free voucher", func(in *PublishInput) { in.PayValue = 0 }, ""},
		{"started already", func(in *PublishInput) { in.BeginTime = voucherNow.Add(-time.Hour) }, ""},
		{"stock 1", func(in *PublishInput) { in.Stock = 1 }, ""},
		{"stock at limit", func(in *PublishInput) { in.Stock = 100_000_000 }, ""},
		{"zero shop", func(in *PublishInput) { in.ShopID = 0 }, "shopId"},
		{"negative shop", func(in *PublishInput) { in.ShopID = -1 }, "shopId"},
		{"empty title", func(in *PublishInput) { in.Title = "" }, "title"},
		{"blank title", func(in *PublishInput) { in.Title = " \t " }, "title"},
		{"long title", func(in *PublishInput) { in.Title = strings.Repeat("x", 256) }, "title"},
		// The columns hold characters: 255 Chinese ones (765 bytes) fit.
		{"255 Chinese characters", func(in *PublishInput) { in.Title = strings.Repeat("券", 255) }, ""},
		{"256 Chinese characters", func(in *PublishInput) { in.Title = strings.Repeat("券", 256) }, "title"},
		{"1024 characters of rules", func(in *PublishInput) { in.Rules = strings.Repeat("规", 1024) }, ""},
		{"long subtitle", func(in *PublishInput) { in.SubTitle = strings.Repeat("x", 256) }, "subTitle"},
		{"long rules", func(in *PublishInput) { in.Rules = strings.Repeat("x", 1025) }, "rules"},
		{"negative pay value", func(in *PublishInput) { in.PayValue = -1 }, "payValue"},
		{"zero actual value", func(in *PublishInput) { in.ActualValue = 0 }, "actualValue"},
		{"type 0", func(in *PublishInput) { in.Type = 0 }, "type"},
		{"type 2", func(in *PublishInput) { in.Type = 2 }, "type"},
		{"stock 0", func(in *PublishInput) { in.Stock = 0 }, "stock"},
		{"negative stock", func(in *PublishInput) { in.Stock = -3 }, "stock"},
		{"huge stock", func(in *PublishInput) { in.Stock = 100_000_001 }, "stock"},
		{"no begin", func(in *PublishInput) { in.BeginTime = time.Time{} }, "beginTime"},
		{"no end", func(in *PublishInput) { in.EndTime = time.Time{} }, "endTime"},
		{"end before begin", func(in *PublishInput) { in.EndTime = in.BeginTime.Add(-time.Minute) }, "endTime"},
		{"end equals begin", func(in *PublishInput) { in.EndTime = in.BeginTime }, "endTime"},
		{"end in the past", func(in *PublishInput) {
			in.BeginTime, in.EndTime = voucherNow.Add(-2*time.Hour), voucherNow.Add(-time.Hour)
		}, "endTime"},
		{"end now", func(in *PublishInput) {
			in.BeginTime, in.EndTime = voucherNow.Add(-2*time.Hour), voucherNow
		}, "endTime"},
		// Times a DATETIME cannot hold once the driver converts them (the
		// driver refuses years outside 1 to 9999: a 500 before the bound).
		{"end past 9999 in UTC", func(in *PublishInput) { in.EndTime = mustRFC3339(t, "9999-12-31T23:59:59-01:00") }, "endTime"},
		{"begin in year 0 in UTC", func(in *PublishInput) { in.BeginTime = mustRFC3339(t, "0001-01-01T00:00:00+01:00") }, "beginTime"},
		{"begin before 2000", func(in *PublishInput) { in.BeginTime = mustRFC3339(t, "1999-12-31T23:59:59Z") }, "beginTime"},
		{"begin in year 1000", func(in *PublishInput) { in.BeginTime = mustRFC3339(t, "1000-01-01T00:00:00Z") }, "beginTime"},
		{"end far in the zone", func(in *PublishInput) { in.EndTime = mustRFC3339(t, "9999-12-31T12:00:00-23:59") }, "endTime"},
		{"begin early in 2000", func(in *PublishInput) { in.BeginTime = mustRFC3339(t, "2000-01-01T14:00:00Z") }, ""},
		{"end late in 9999", func(in *PublishInput) { in.EndTime = mustRFC3339(t, "9999-12-30T00:00:00Z") }, ""},
	}
	svc := NewVouchers(catalogtest.NewVouchers(100), allShops{}, func() time.Time { return voucherNow })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validInput()
			tt.edit(&in)
			err := svc.Validate(in)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var ia *model.InvalidArgumentError
			if !errors.As(err, &ia) {
				t.Fatalf("got %v, want *model.InvalidArgumentError", err)
			}
			if ia.Field != tt.wantField {
				t.Errorf("field: got %q, want %q", ia.Field, tt.wantField)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("message %q does not name %q", err.Error(), tt.wantField)
			}
		})
	}
}

func TestPublish(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*PublishInput)
		createErr error
		hookErr   error
		wantErr   error
		wantField string
		wantStore bool
	}{
		{name: "stored", edit: func(*PublishInput) {}, wantStore: true},
		{name: "invalid not stored", edit: func(in *PublishInput) { in.Stock = 0 }, wantField: "stock"},
		{name: "database down", edit: func(*PublishInput) {}, createErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
		{name: "hook fails", edit: func(*PublishInput) {}, hookErr: servicetest.ErrIO, wantErr: servicetest.ErrIO, wantStore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := catalogtest.NewVouchers(100)
			store.CreateErr = tt.createErr
			svc := NewVouchers(store, allShops{}, func() time.Time { return voucherNow })
			var hooked []model.SeckillVoucher
			svc.OnPublished(func(_ context.Context, sv *model.SeckillVoucher) error {
				hooked = append(hooked, *sv)
				return tt.hookErr
			})
			in := validInput()
			tt.edit(&in)
			id, err := svc.Publish(context.Background(), in)
			servicetest.CheckErr(t, err, tt.wantField, tt.wantErr)
			if got := len(store.Seckill) == 1; got != tt.wantStore {
				t.Fatalf("stored: got %v, want %v", got, tt.wantStore)
			}
			if !tt.wantStore {
				if len(hooked) != 0 {
					t.Errorf("hook calls without a stored voucher: got %d, want 0", len(hooked))
				}
				return
			}
			if tt.wantErr == nil && id != 101 {
				t.Errorf("id: got %d, want 101", id)
			}
			sv := store.Seckill[101]
			if sv.Stock != in.Stock || sv.InitialStock != in.Stock {
				t.Errorf("stock, initial stock: got %d, %d, want %d, %d", sv.Stock, sv.InitialStock, in.Stock, in.Stock)
			}
			if !sv.BeginTime.Equal(in.BeginTime) || !sv.EndTime.Equal(in.EndTime) {
				t.Errorf("window: got %v..%v, want %v..%v", sv.BeginTime, sv.EndTime, in.BeginTime, in.EndTime)
			}
			v := store.Vouchers[101]
			if v.ShopID != in.ShopID || v.Title != in.Title || v.Type != in.Type || v.ActualValue != in.ActualValue {
				t.Errorf("voucher: got %+v, want the input's fields %+v", v, in)
			}
			if len(hooked) != 1 || hooked[0].VoucherID != 101 {
				t.Errorf("hook: got %+v, want one call for voucher 101", hooked)
			}
		})
	}
}

func TestList(t *testing.T) {
	store := catalogtest.NewVouchers(100)
	svc := NewVouchers(store, allShops{}, func() time.Time { return voucherNow })
	ctx := context.Background()
	for _, shop := range []int64{1, 1, 2} {
		in := validInput()
		in.ShopID = shop
		if _, err := svc.Publish(ctx, in); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	tests := []struct {
		name      string
		shopID    int64
		want      int
		wantField string
	}{
		{name: "shop 1", shopID: 1, want: 2},
		{name: "shop 2", shopID: 2, want: 1},
		{name: "empty shop", shopID: 3, want: 0},
		{name: "zero shop", shopID: 0, wantField: "shopId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := svc.List(ctx, tt.shopID)
			if tt.wantField != "" {
				var ia *model.InvalidArgumentError
				if !errors.As(err, &ia) || ia.Field != tt.wantField {
					t.Fatalf("got %v, want InvalidArgumentError on %q", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if len(list) != tt.want {
				t.Fatalf("vouchers: got %d, want %d", len(list), tt.want)
			}
			for _, v := range list {
				if v.ShopID != tt.shopID || v.Stock != 100 || v.InitialStock != 100 {
					t.Errorf("voucher: got shop %d stock %d/%d, want shop %d stock 100/100", v.ShopID, v.Stock, v.InitialStock, tt.shopID)
				}
			}
		})
	}
}

func mustRFC3339(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

// TestPublishWholeSeconds: a window given to the millisecond is stored,
// and handed to the publish hook (the Redis load), in whole seconds, as
// the database keeps it; a window shorter than a second once so cut is
// refused.
func TestPublishWholeSeconds(t *testing.T) {
	store := catalogtest.NewVouchers(100)
	svc := NewVouchers(store, allShops{}, func() time.Time { return voucherNow })
	var hooked model.SeckillVoucher
	svc.OnPublished(func(_ context.Context, sv *model.SeckillVoucher) error { hooked = *sv; return nil })
	in := validInput()
	in.BeginTime, in.EndTime = in.BeginTime.Add(700*time.Millisecond), in.EndTime.Add(999*time.Millisecond)
	if _, err := svc.Publish(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	wantBegin, wantEnd := validInput().BeginTime, validInput().EndTime
	for name, sv := range map[string]model.SeckillVoucher{"stored": store.Seckill[101], "hooked": hooked} {
		if !sv.BeginTime.Equal(wantBegin) || !sv.EndTime.Equal(wantEnd) {
			t.Errorf("%s window: got %v..%v, want %v..%v", name, sv.BeginTime, sv.EndTime, wantBegin, wantEnd)
		}
	}
	in = validInput()
	in.BeginTime = in.BeginTime.Add(100 * time.Millisecond)
	in.EndTime = in.BeginTime.Add(800 * time.Millisecond) // the same second
	_, err := svc.Publish(context.Background(), in)
	servicetest.CheckErr(t, err, "endTime", nil)
}
