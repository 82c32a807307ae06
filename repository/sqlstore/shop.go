package sqlstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Shops stores the shops in tb_shop.
type Shops struct{ db *gorm.DB }

// NewShops returns the shop store.
func NewShops(db *DB) *Shops { return &Shops{db: db.Gorm} }

// GetShop returns the shop or model.ErrShopNotFound.
func (r *Shops) GetShop(ctx context.Context, id int64) (*model.Shop, error) {
	return takeOne[model.Shop](ctx, r.db, "id", id, model.ErrShopNotFound)
}

// CreateShop inserts s and sets its id, with the search index's entries
// of its name in the same transaction.
func (r *Shops) CreateShop(ctx context.Context, s *model.Shop) error {
	return translate(r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(s).Error; err != nil {
			return err
		}
		return writeGrams(tx, s.ID, s.Name, false)
	}))
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
	// A new name replaces the search index's entries of the shop in the
	// same transaction.
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&model.Shop{}).Where("id = ?", id).Updates(cols)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			// MySQL counts changed rows: 0 is an unknown id, or a patch
			// that changed nothing within the same second.
			if _, err := takeOne[model.Shop](ctx, tx, "id", id, model.ErrShopNotFound); err != nil {
				return err
			}
		}
		if p.Name == nil {
			return nil
		}
		return writeGrams(tx, id, *p.Name, true)
	})
	if errors.Is(err, model.ErrShopNotFound) {
		return model.ErrShopNotFound
	}
	return translate(err)
}

// ListShops returns at most limit shops whose name contains name, letter
// case aside ("示范" finds 秒杀示范店, "tea" finds "Green Tea House"), in name
// order, then id order; every shop when name is empty, in id order. A
// search reads the search index (tb_shop_bigram), bounded whatever the
// number of shops (searchShops): at most SearchCandidates shops are looked
// at, so a search whose every bigram is that common may miss some matches.
func (r *Shops) ListShops(ctx context.Context, name string, limit int) ([]model.Shop, error) {
	if name != "" {
		return r.searchShops(ctx, name, limit)
	}
	var out []model.Shop
	if err := r.db.WithContext(ctx).Limit(limit).Order("id").Find(&out).Error; err != nil {
		return nil, translate(err)
	}
	return out, nil
}
