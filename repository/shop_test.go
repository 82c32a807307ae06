package repository

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/model"
)

func ptrOf[T any](v T) *T { return &v }

// TestShops: create, read back every column, update some fields (the rest
// kept), an update that changes nothing, and unknown ids, on both
// databases. Text goes through utf8mb4 (Chinese, an emoji).
func TestShops(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := NewShops(db)
			now := time.Now().Truncate(time.Second)
			in := &model.Shop{
				Name: "103茶餐厅 🍵", TypeID: 1, Images: "/imgs/1.jpg,/imgs/2.jpg", Area: "大关",
				Address: "金华路锦昌文华苑29号", X: 120.149192, Y: 30.316078, AvgPrice: 80, Sold: 4215,
				Comments: 3035, Score: 37, OpenHours: "10:00-22:00", CreateTime: now, UpdateTime: now,
			}
			if err := r.CreateShop(ctx, in); err != nil {
				t.Fatalf("CreateShop: %v", err)
			}
			if in.ID <= 0 {
				t.Fatalf("id: got %d, want one set", in.ID)
			}
			got, err := r.GetShop(ctx, in.ID)
			if err != nil {
				t.Fatalf("GetShop: %v", err)
			}
			if got.Name != in.Name || got.TypeID != 1 || got.Images != in.Images || got.Area != in.Area ||
				got.Address != in.Address || got.X != in.X || got.Y != in.Y || got.AvgPrice != 80 ||
				got.Sold != 4215 || got.Comments != 3035 || got.Score != 37 || got.OpenHours != in.OpenHours ||
				!got.CreateTime.Equal(now) {
				t.Errorf("read back: got %+v, want %+v", got, in)
			}

			later := now.Add(time.Minute)
			if err := r.UpdateShop(ctx, in.ID, model.ShopPatch{Score: ptrOf(45), Name: ptrOf("新名字")}, later); err != nil {
				t.Fatalf("UpdateShop: %v", err)
			}
			got, err = r.GetShop(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Score != 45 || got.Name != "新名字" || got.Images != in.Images || got.Sold != 4215 || !got.UpdateTime.Equal(later) {
				t.Errorf("after update: got %+v, want score 45, new name, the rest kept, update time %v", got, later)
			}
			// The same values at the same time change no row: still no error.
			if err := r.UpdateShop(ctx, in.ID, model.ShopPatch{Score: ptrOf(45)}, later); err != nil {
				t.Errorf("update that changes nothing: got %v, want nil", err)
			}
			if err := r.UpdateShop(ctx, in.ID+1_000_000, model.ShopPatch{Score: ptrOf(1)}, later); !errors.Is(err, model.ErrShopNotFound) {
				t.Errorf("update of an unknown shop: got %v, want ErrShopNotFound", err)
			}
			if _, err := r.GetShop(ctx, in.ID+1_000_000); !errors.Is(err, model.ErrShopNotFound) {
				t.Errorf("unknown shop: got %v, want ErrShopNotFound", err)
			}
		})
	}
}
