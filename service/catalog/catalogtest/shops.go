package catalogtest

import (
	"context"
	"sync"
	"time"

	"seckill/model"
)

// Shops is a catalog.ShopStore over a map. CreateShop numbers the shops from
// Next on.
type Shops struct {
	mu    sync.Mutex
	Shops map[int64]model.Shop
	Next  int64
	// GetErr, when set, is GetShop's error.
	GetErr error
}

// NewShops returns an empty store that numbers the shops after next.
func NewShops(next int64) *Shops { return &Shops{Shops: map[int64]model.Shop{}, Next: next} }

// Count is the number of shops.
func (f *Shops) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Shops)
}

// GetShop returns shop id or model.ErrShopNotFound.
func (f *Shops) GetShop(_ context.Context, id int64) (*model.Shop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.GetErr != nil {
		return nil, f.GetErr
	}
	s, ok := f.Shops[id]
	if !ok {
		return nil, model.ErrShopNotFound
	}
	return &s, nil
}

// CreateShop numbers s and stores it.
func (f *Shops) CreateShop(_ context.Context, s *model.Shop) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Next++
	s.ID = f.Next
	f.Shops[s.ID] = *s
	return nil
}

// UpdateShop writes p's fields into shop id, updated at now.
func (f *Shops) UpdateShop(_ context.Context, id int64, p model.ShopPatch, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.Shops[id]
	if !ok {
		return model.ErrShopNotFound
	}
	set(&s.Name, p.Name)
	set(&s.TypeID, p.TypeID)
	set(&s.Images, p.Images)
	set(&s.Area, p.Area)
	set(&s.Address, p.Address)
	set(&s.X, p.X)
	set(&s.Y, p.Y)
	set(&s.AvgPrice, p.AvgPrice)
	set(&s.Sold, p.Sold)
	set(&s.Comments, p.Comments)
	set(&s.Score, p.Score)
	set(&s.OpenHours, p.OpenHours)
	s.UpdateTime = now
	f.Shops[id] = s
	return nil
}

// set writes *v to *dst unless v is nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
