package catalog

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/servicetest"
)

// allShops is a ShopFinder for which every shop exists.
type allShops struct{}

func (allShops) GetShop(_ context.Context, id int64) (*model.Shop, error) {
	return &model.Shop{ID: id}, nil
}

func ptr[T any](v T) *T { return &v }

func validShop() model.ShopPatch {
	return model.ShopPatch{
		Name: ptr("103茶餐厅"), TypeID: ptr(int64(1)), Images: ptr("/imgs/a.jpg,/imgs/b.jpg"),
		Area: ptr("大关"), Address: ptr("金华路锦昌文华苑29号"), X: ptr(120.149192), Y: ptr(30.316078),
		AvgPrice: ptr(int64(80)), Sold: ptr(4215), Comments: ptr(3035), Score: ptr(37), OpenHours: ptr("10:00-22:00"),
	}
}

func TestValidateShop(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*model.ShopPatch)
		wantField string
	}{
		{"valid", func(*model.ShopPatch) {}, ""},
		{"name blank", func(p *model.ShopPatch) { p.Name = ptr("   ") }, "name"},
		{"name 128 characters", func(p *model.ShopPatch) { p.Name = ptr(strings.Repeat("店", 128)) }, ""},
		{"name 129 characters", func(p *model.ShopPatch) { p.Name = ptr(strings.Repeat("店", 129)) }, "name"},
		{"name with NUL", func(p *model.ShopPatch) { p.Name = ptr("a\x00b") }, "name"},
		{"name not UTF-8", func(p *model.ShopPatch) { p.Name = ptr("a\xffb") }, "name"},
		{"typeId 0", func(p *model.ShopPatch) { p.TypeID = ptr(int64(0)) }, "typeId"},
		{"images empty", func(p *model.ShopPatch) { p.Images = ptr("") }, ""},
		{"images with an empty path", func(p *model.ShopPatch) { p.Images = ptr("/a.jpg,,/b.jpg") }, "images"},
		{"images too long", func(p *model.ShopPatch) { p.Images = ptr(strings.Repeat("x", 1025)) }, "images"},
		{"area too long", func(p *model.ShopPatch) { p.Area = ptr(strings.Repeat("x", 129)) }, "area"},
		{"address blank", func(p *model.ShopPatch) { p.Address = ptr("") }, "address"},
		{"address too long", func(p *model.ShopPatch) { p.Address = ptr(strings.Repeat("x", 256)) }, "address"},
		{"x out of range", func(p *model.ShopPatch) { p.X = ptr(180.5) }, "x"},
		{"x NaN", func(p *model.ShopPatch) { p.X = ptr(math.NaN()) }, "x"},
		{"y out of range", func(p *model.ShopPatch) { p.Y = ptr(-90.01) }, "y"},
		{"y infinite", func(p *model.ShopPatch) { p.Y = ptr(math.Inf(1)) }, "y"},
		{"avgPrice negative", func(p *model.ShopPatch) { p.AvgPrice = ptr(int64(-1)) }, "avgPrice"},
		{"avgPrice huge", func(p *model.ShopPatch) { p.AvgPrice = ptr(int64(math.MaxInt64)) }, "avgPrice"},
		{"sold negative", func(p *model.ShopPatch) { p.Sold = ptr(-1) }, "sold"},
		{"sold past INT", func(p *model.ShopPatch) { p.Sold = ptr(math.MaxInt32 + 1) }, "sold"},
		{"comments negative", func(p *model.ShopPatch) { p.Comments = ptr(-5) }, "comments"},
		{"score 51", func(p *model.ShopPatch) { p.Score = ptr(51) }, "score"},
		{"score 50", func(p *model.ShopPatch) { p.Score = ptr(50) }, ""},
		{"openHours too long", func(p *model.ShopPatch) { p.OpenHours = ptr(strings.Repeat("1", 33)) }, "openHours"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validShop()
			tt.edit(&p)
			servicetest.CheckErr(t, ValidateShop(p), tt.wantField, nil)
		})
	}
}

func TestShopsCreate(t *testing.T) {
	store := catalogtest.NewShops(10)
	svc := NewShops(store, func() time.Time { return voucherNow })
	ctx := context.Background()
	for _, missing := range []struct {
		field string
		clear func(*model.ShopPatch)
	}{
		{"name", func(p *model.ShopPatch) { p.Name = nil }},
		{"typeId", func(p *model.ShopPatch) { p.TypeID = nil }},
		{"address", func(p *model.ShopPatch) { p.Address = nil }},
		{"x", func(p *model.ShopPatch) { p.X = nil }},
		{"y", func(p *model.ShopPatch) { p.Y = nil }},
	} {
		p := validShop()
		missing.clear(&p)
		_, err := svc.Create(ctx, p)
		servicetest.CheckErr(t, err, missing.field, nil)
	}
	if len(store.Shops) != 0 {
		t.Fatalf("stored after refusals: got %d shops, want 0", len(store.Shops))
	}
	p := validShop()
	p.Images = ptr(" /a.jpg , /b.jpg ")
	p.Name = ptr("  trimmed  ")
	id, err := svc.Create(ctx, p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	s := store.Shops[id]
	if s.Name != "trimmed" || s.Images != "/a.jpg,/b.jpg" || s.Score != 37 || !s.CreateTime.Equal(voucherNow) {
		t.Errorf("stored: got %+v, want trimmed name and images, score 37, create time %v", s, voucherNow)
	}
	// Only the required fields: the others default to zero.
	id, err = svc.Create(ctx, model.ShopPatch{Name: ptr("n"), TypeID: ptr(int64(2)), Address: ptr("a"), X: ptr(0.0), Y: ptr(0.0)})
	if err != nil {
		t.Fatalf("Create minimal: %v", err)
	}
	if s := store.Shops[id]; s.Images != "" || s.Score != 0 || s.OpenHours != "" {
		t.Errorf("minimal shop: got %+v, want empty optional fields", s)
	}
}

func TestShopsUpdateAndGet(t *testing.T) {
	store := catalogtest.NewShops(10)
	svc := NewShops(store, func() time.Time { return voucherNow })
	ctx := context.Background()
	id, err := svc.Create(ctx, validShop())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		id        int64
		patch     model.ShopPatch
		wantField string
		wantErr   error
	}{
		{"id 0", 0, model.ShopPatch{Score: ptr(40)}, "id", nil},
		{"nothing to update", id, model.ShopPatch{}, "body", nil},
		{"invalid field", id, model.ShopPatch{Score: ptr(99)}, "score", nil},
		{"blank name", id, model.ShopPatch{Name: ptr(" ")}, "name", nil},
		{"unknown shop", id + 100, model.ShopPatch{Score: ptr(40)}, "", model.ErrShopNotFound},
		{"updated", id, model.ShopPatch{Score: ptr(45), Name: ptr(" new name ")}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servicetest.CheckErr(t, svc.Update(ctx, tt.id, tt.patch), tt.wantField, tt.wantErr)
		})
	}
	s, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Score != 45 || s.Name != "new name" || s.Images != "/imgs/a.jpg,/imgs/b.jpg" {
		t.Errorf("after update: got %+v, want score 45, trimmed name, images kept", s)
	}
	if _, err := svc.Get(ctx, -1); !errors.As(err, new(*model.InvalidArgumentError)) {
		t.Errorf("Get(-1): got %v, want an input error", err)
	}
	if _, err := svc.Get(ctx, id+1); !errors.Is(err, model.ErrShopNotFound) {
		t.Errorf("Get(unknown): got %v, want ErrShopNotFound", err)
	}
}

func TestPublishNeedsAShop(t *testing.T) {
	shops := catalogtest.NewShops(10)
	shops.Shops[1] = model.Shop{ID: 1, Name: "s"}
	store := catalogtest.NewVouchers(100)
	svc := NewVouchers(store, shops, func() time.Time { return voucherNow })
	ctx := context.Background()

	in := validInput()
	in.ShopID = 2
	_, err := svc.Publish(ctx, in)
	servicetest.CheckErr(t, err, "shopId", nil)
	if !errors.Is(err, model.ErrShopNotFound) {
		t.Errorf("got %v, want it to match ErrShopNotFound too", err)
	}
	if len(store.Vouchers) != 0 {
		t.Fatalf("stored a voucher of an unknown shop: %d", len(store.Vouchers))
	}

	shops.GetErr = model.Unavailable(servicetest.ErrIO)
	in.ShopID = 1
	_, err = svc.Publish(ctx, in)
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("database down: got %v, want ErrUnavailable", err)
	}
	var ia *model.InvalidArgumentError
	if errors.As(err, &ia) {
		t.Errorf("database down: got an input error %v, want none", err)
	}

	shops.GetErr = nil
	if _, err := svc.Publish(ctx, in); err != nil {
		t.Fatalf("known shop: got %v, want nil", err)
	}
}
