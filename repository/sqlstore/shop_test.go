package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
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

// TestListShops: a name's part finds its shops (Chinese too), LIKE's
// wildcards and the escape character match only themselves, and the
// limit holds, on both databases.
func TestListShops(t *testing.T) {
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		ctx := context.Background()
		r := NewShops(db)
		tag := fmt.Sprintf("q%d", time.Now().UnixNano())
		now := time.Now().Truncate(time.Second)
		for _, n := range []string{tag + " 茶餐厅", tag + " 50%_off!", tag + " 50 off"} {
			if err := r.CreateShop(ctx, &model.Shop{Name: n, TypeID: 1, Address: "a", CreateTime: now, UpdateTime: now}); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			query string
			want  int
		}{{tag, 3}, {tag + " 茶", 1}, {tag + " 50%", 1}, {tag + " 50_", 0}, {tag + " 50%_off!", 1}, {tag + " 50", 2}}
		for _, tt := range tests {
			got, err := r.ListShops(ctx, tt.query, 50)
			if err != nil {
				t.Fatalf("ListShops(%q): %v", tt.query, err)
			}
			if len(got) != tt.want {
				t.Errorf("ListShops(%q): got %d shops, want %d", tt.query, len(got), tt.want)
			}
		}
		if got, err := r.ListShops(ctx, tag, 2); err != nil || len(got) != 2 {
			t.Errorf("ListShops with limit 2: got %d (%v), want 2", len(got), err)
		}
	})
}

// TestListShopsReadsBounded: on MariaDB with 5,000 shops, a search reads
// idx_shop_name's range of its prefix. A prefix nothing starts with reads
// no row. One every shop starts with reads the page and no more. Rows read
// are the session's Handler_read_* counters, on a pool of one connection.
func TestListShopsReadsBounded(t *testing.T) {
	db := privateDatabases(t)["mysql"]
	if db == nil {
		t.Skip("SECKILL_MYSQL_DSN not set")
	}
	ctx := context.Background()
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1) // every statement below on one session
	const shops = 5000
	var values strings.Builder
	for i := range shops {
		if i > 0 {
			values.WriteString(",")
		}
		fmt.Fprintf(&values, "('shop %05d 茶餐厅', 1, 'a', 0, 0)", i)
	}
	if err := db.Gorm.Exec("INSERT INTO tb_shop (name, type_id, address, x, y) VALUES " + values.String()).Error; err != nil {
		t.Fatal(err)
	}
	rowsRead := func() int64 {
		var rows []struct {
			VariableName string `gorm:"column:Variable_name"`
			Value        int64  `gorm:"column:Value"`
		}
		if err := db.Gorm.Raw("SHOW SESSION STATUS LIKE 'Handler_read%'").Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, r := range rows {
			n += r.Value
		}
		return n
	}
	r := NewShops(db)
	tests := []struct {
		query    string
		want     int
		maxReads int64
	}{
		{"no such shop", 0, 2},
		{"茶餐厅", 0, 2}, // a name's middle: not a prefix
		{"shop", 50, 52},
		{"shop 0421", 10, 12},
	}
	for _, tt := range tests {
		before := rowsRead()
		got, err := r.ListShops(ctx, tt.query, 50)
		reads := rowsRead() - before
		if err != nil {
			t.Fatalf("ListShops(%q): %v", tt.query, err)
		}
		if len(got) != tt.want {
			t.Errorf("ListShops(%q): got %d shops, want %d", tt.query, len(got), tt.want)
		}
		// SHOW STATUS reads rows of its own: the second call's count.
		read := reads - (rowsRead() - before - reads)
		t.Logf("ListShops(%q): %d shops, %d rows read", tt.query, len(got), read)
		if read > tt.maxReads {
			t.Errorf("ListShops(%q): %d rows read, want at most %d (of %d shops)", tt.query, read, tt.maxReads, shops)
		}
	}
	if got, _ := r.ListShops(ctx, "shop 0421", 50); len(got) > 0 && got[0].Name != "shop 04210 茶餐厅" {
		t.Errorf("first of prefix: got %q, want the first in name order", got[0].Name)
	}
}
