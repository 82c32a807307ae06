package sqlstore

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Shops stores the course's shops in tb_shop.
type Shops struct{ db *gorm.DB }

// NewShops returns the shop store.
func NewShops(db *DB) *Shops { return &Shops{db: db.Gorm} }

// GetShop returns the shop or model.ErrShopNotFound.
func (r *Shops) GetShop(ctx context.Context, id int64) (*model.Shop, error) {
	return takeOne[model.Shop](ctx, r.db, "id", id, model.ErrShopNotFound)
}

// CreateShop inserts s and sets its id.
func (r *Shops) CreateShop(ctx context.Context, s *model.Shop) error {
	return translate(r.db.WithContext(ctx).Create(s).Error)
}

// UpdateShop sets the patch's non-nil fields and update_time of shop id, or
// returns model.ErrShopNotFound.
func (r *Shops) UpdateShop(ctx context.Context, id int64, p model.ShopPatch, now time.Time) error {
	cols := map[string]any{"update_time": now}
	set := func(col string, isSet bool, v func() any) {
		if isSet {
			cols[col] = v()
		}
	}
	set("name", p.Name != nil, func() any { return *p.Name })
	set("type_id", p.TypeID != nil, func() any { return *p.TypeID })
	set("images", p.Images != nil, func() any { return *p.Images })
	set("area", p.Area != nil, func() any { return *p.Area })
	set("address", p.Address != nil, func() any { return *p.Address })
	set("x", p.X != nil, func() any { return *p.X })
	set("y", p.Y != nil, func() any { return *p.Y })
	set("avg_price", p.AvgPrice != nil, func() any { return *p.AvgPrice })
	set("sold", p.Sold != nil, func() any { return *p.Sold })
	set("comments", p.Comments != nil, func() any { return *p.Comments })
	set("score", p.Score != nil, func() any { return *p.Score })
	set("open_hours", p.OpenHours != nil, func() any { return *p.OpenHours })
	res := r.db.WithContext(ctx).Model(&model.Shop{}).Where("id = ?", id).Updates(cols)
	if res.Error != nil {
		return translate(res.Error)
	}
	if res.RowsAffected > 0 {
		return nil
	}
	// MySQL counts changed rows: 0 is an unknown id, or a patch that
	// changed nothing within the same second.
	_, err := r.GetShop(ctx, id)
	return err
}

// ListShops returns at most limit shops whose name starts with name, in
// name order, then id order; every shop when name is empty, in id order.
// LIKE's wildcards in name match themselves. A prefix is a range of
// idx_shop_name read in its order: a search reads at most limit rows past
// the first match, whatever the table's size.
func (r *Shops) ListShops(ctx context.Context, name string, limit int) ([]model.Shop, error) {
	q := r.db.WithContext(ctx).Limit(limit)
	if name == "" {
		q = q.Order("id")
	} else {
		// '!' escapes: MySQL and SQLite read it alike (a backslash
		// differs between them).
		esc := strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`).Replace(name)
		q = q.Where(`name LIKE ? ESCAPE '!'`, esc+"%").Order("name").Order("id")
	}
	var out []model.Shop
	if err := q.Find(&out).Error; err != nil {
		return nil, translate(err)
	}
	return out, nil
}
