package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
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

// TestListShops: any part of a name finds its shops, letter case aside
// (Chinese too); LIKE's wildcards and the escape character match only
// themselves; the limit holds; on both databases.
func TestListShops(t *testing.T) {
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		ctx := context.Background()
		r := NewShops(db)
		tag := fmt.Sprintf("q%d", time.Now().UnixNano())
		now := time.Now().Truncate(time.Second)
		for _, n := range []string{tag + " 茶餐厅", tag + " 50%_off!", tag + " 50 off", "Green Tea " + tag + " House"} {
			if err := r.CreateShop(ctx, &model.Shop{Name: n, TypeID: 1, Address: "a", CreateTime: now, UpdateTime: now}); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			query string
			want  int
		}{
			{tag, 4}, {tag + " 茶", 1}, {tag + " 50%", 1}, {tag + " 50_", 0}, {tag + " 50%_off!", 1}, {tag + " 50", 2},
			{tag[3:], 4}, // an infix of every name
			{strings.ToUpper("tea " + tag + " h"), 1}, // letter case aside
			{tag[5:] + " 茶餐", 1},                      // Chinese, inside
			{"餐厅" + tag, 0},                           // the bigrams, not in this order
		}
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
		// Name order: "Green…" before "q…".
		if got, _ := r.ListShops(ctx, tag, 50); len(got) == 4 && !strings.HasPrefix(got[0].Name, "Green") {
			t.Errorf("ListShops(%q): first %q, want name order", tag, got[0].Name)
		}
	})
}

// TestShopGrams: each bigram of the lower-cased name and its last
// character, once each.
func TestShopGrams(t *testing.T) {
	for name, want := range map[string]string{
		"秒杀示范店":   "店|杀示|示范|秒杀|范店",
		"Tea Tea": " t|a|a |ea|te",
		"A":       "a",
		" ":       "",
	} {
		if got := strings.Join(ShopGrams(name), "|"); got != want {
			t.Errorf("ShopGrams(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestShopSearchIndex, on a database of its own (both kinds): a part of a
// name, Chinese or any letter case, finds the shop; one character finds
// the names that hold it, the last one too; a rename moves the shop's
// index entries in its transaction (the old name no longer finds it); an
// update of an unknown shop writes none; a shop without entries (written
// before the index) is found once Migrate has filled them.
func TestShopSearchIndex(t *testing.T) {
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		ctx := context.Background()
		r := NewShops(db)
		now := time.Now().Truncate(time.Second)
		ids := map[string]int64{}
		for _, n := range []string{"秒杀示范店", "Green tea house", "Teapot", "A", "bA", "Ccc"} {
			s := &model.Shop{Name: n, TypeID: 1, Address: "a", CreateTime: now, UpdateTime: now}
			if err := r.CreateShop(ctx, s); err != nil {
				t.Fatal(err)
			}
			ids[n] = s.ID
		}
		names := func(q string) string {
			t.Helper()
			got, err := r.ListShops(ctx, q, 50)
			if err != nil {
				t.Fatalf("ListShops(%q): %v", q, err)
			}
			var out []string
			for _, s := range got {
				out = append(out, s.Name)
			}
			slices.Sort(out) // the databases' name orders differ in letter case
			return strings.Join(out, "|")
		}
		for q, want := range map[string]string{
			"示范": "秒杀示范店", "示范店": "秒杀示范店", "店": "秒杀示范店", "秒": "秒杀示范店", "范示": "",
			"tea": "Green tea house|Teapot", "TEA H": "Green tea house", "house": "Green tea house",
			"a": "A|Green tea house|Teapot|bA", "c": "Ccc", "z": "", "cc": "Ccc", "ccc": "Ccc", "cccc": "",
		} {
			if got := names(q); got != want {
				t.Errorf("ListShops(%q) = %q, want %q", q, got, want)
			}
		}

		if err := r.UpdateShop(ctx, ids["Teapot"], model.ShopPatch{Name: ptrOf("Coffee 店")}, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := names("teapot"); got != "" {
			t.Errorf("the old name after a rename: %q, want nothing", got)
		}
		if got := names("fee 店"); got != "Coffee 店" {
			t.Errorf("the new name after a rename: %q, want Coffee 店", got)
		}
		// An update of other fields keeps the entries.
		if err := r.UpdateShop(ctx, ids["Ccc"], model.ShopPatch{Score: ptrOf(40)}, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := names("cc"); got != "Ccc" {
			t.Errorf("after an update of the score: %q, want Ccc", got)
		}
		var before, after int64
		db.Gorm.Raw("SELECT COUNT(*) FROM tb_shop_bigram").Scan(&before)
		if err := r.UpdateShop(ctx, 1_000_000_000, model.ShopPatch{Name: ptrOf("ghost")}, now); !errors.Is(err, model.ErrShopNotFound) {
			t.Errorf("rename of an unknown shop: %v, want ErrShopNotFound", err)
		}
		db.Gorm.Raw("SELECT COUNT(*) FROM tb_shop_bigram").Scan(&after)
		if after != before {
			t.Errorf("rename of an unknown shop: %d index entries, want %d (none written)", after, before)
		}

		// A shop written before the index: no entries, not found until
		// Migrate fills them.
		if err := db.Gorm.Exec("DELETE FROM tb_shop_bigram WHERE shop_id = ?", ids["秒杀示范店"]).Error; err != nil {
			t.Fatal(err)
		}
		if got := names("示范"); got != "" {
			t.Fatalf("a shop without entries found: %q", got)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if got := names("示范"); got != "秒杀示范店" {
			t.Errorf("after Migrate: %q, want the shop found", got)
		}
		if n, err := db.BackfillShopGrams(ctx); err != nil || n != 0 {
			t.Errorf("a second backfill: %d shops (%v), want none", n, err)
		}
	})
}

// handlerReads is the session's Handler_read_* total (rows and index
// entries read), on a pool of one connection; SHOW STATUS's own reads are
// taken out by the caller.
func handlerReads(t *testing.T, db *DB) int64 {
	t.Helper()
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

// TestListShopsReadsBounded: on MariaDB with 5,000 shops sharing most of
// their bigrams, a search reads at most SearchReadBound index entries and
// rows (plus its answer), whatever it asks: a name nothing holds, a part
// every name holds, a rare part, one character. Rows read are the
// session's Handler_read_* counters, on a pool of one connection.
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
	if err := FillShops(ctx, db, shops, func(i int) string { return fmt.Sprintf("shop %05d 茶餐厅", i) }); err != nil {
		t.Fatal(err)
	}
	r := NewShops(db)
	tests := []struct {
		query string
		want  int
	}{
		{"no such shop", 0},
		{"茶餐厅", 50}, // a name's end: every shop
		{"shop", 50},
		{"p 0421", 10},
		{"04217 茶", 1},
		{"茶", 50},
		{"9", 50},
	}
	for _, tt := range tests {
		before := handlerReads(t, db)
		got, err := r.ListShops(ctx, tt.query, 50)
		reads := handlerReads(t, db) - before
		if err != nil {
			t.Fatalf("ListShops(%q): %v", tt.query, err)
		}
		if len(got) != tt.want {
			t.Errorf("ListShops(%q): got %d shops, want %d", tt.query, len(got), tt.want)
		}
		// SHOW STATUS reads rows of its own: the second call's count.
		read := reads - (handlerReads(t, db) - before - reads)
		t.Logf("ListShops(%q): %d shops, %d rows read", tt.query, len(got), read)
		if limit := int64(SearchReadBound + 2*50 + 10); read > limit {
			t.Errorf("ListShops(%q): %d rows read, want at most %d (of %d shops)", tt.query, read, limit, shops)
		}
	}
	if got, _ := r.ListShops(ctx, "p 0421", 50); len(got) > 0 && got[0].Name != "shop 04210 茶餐厅" {
		t.Errorf("first of the matches: got %q, want the first in name order", got[0].Name)
	}
}

// TestShopSearchExplain: on MariaDB, the search's candidates come from
// tb_shop_bigram's primary key and each shop from tb_shop's (EXPLAIN of
// SearchChunkSQL), never from a scan of either table.
func TestShopSearchExplain(t *testing.T) {
	db := privateDatabases(t)["mysql"]
	if db == nil {
		t.Skip("SECKILL_MYSQL_DSN not set")
	}
	ctx := context.Background()
	if err := FillShops(ctx, db, 2000, func(i int) string { return fmt.Sprintf("Tea house %d 示范", i) }); err != nil {
		t.Fatal(err)
	}
	plan, err := ExplainSearch(ctx, db, "ea")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("EXPLAIN:\n%s", plan)
	for _, want := range []string{"g range PRIMARY", "s eq_ref PRIMARY"} {
		if !strings.Contains(plan, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, plan)
		}
	}
}
