package catalog

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"seckill/model"
)

// ShopStore reads and writes the shops (tb_shop).
type ShopStore interface {
	// GetShop returns model.ErrShopNotFound when no shop has the id.
	GetShop(ctx context.Context, id int64) (*model.Shop, error)
	// CreateShop inserts s and sets its id.
	CreateShop(ctx context.Context, s *model.Shop) error
	// UpdateShop sets the patch's non-nil fields and the update time of
	// shop id; model.ErrShopNotFound when no shop has the id.
	UpdateShop(ctx context.Context, id int64, p model.ShopPatch, now time.Time) error
}

// ShopLister lists shops by name.
type ShopLister interface {
	// ListShops returns at most limit shops whose name contains name,
	// letter case aside, in name order (every shop when name is empty, in
	// id order), bounded whatever the number of shops.
	ListShops(ctx context.Context, name string, limit int) ([]model.Shop, error)
}

// MaxShopList is the most shops one list returns.
const MaxShopList = 50

// MaxShopSearches bounds the searches one instance runs at a time. The
// route needs no token: a flood of searches holds at most this many of the
// database's connections, and the purchases keep the rest.
const MaxShopSearches = 4

// ShopSearch finds shops by name.
type ShopSearch struct {
	store ShopLister
	// slots holds one token per search running.
	slots chan struct{}
}

// NewShopSearch returns the shop search on store.
func NewShopSearch(store ShopLister) *ShopSearch {
	return &ShopSearch{store: store, slots: make(chan struct{}, MaxShopSearches)}
}

// List returns at most MaxShopList shops whose name contains name. With
// MaxShopSearches searches running, it refuses at once: RATE_LIMITED.
func (s *ShopSearch) List(ctx context.Context, name string) ([]model.Shop, error) {
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxShopName {
		return nil, model.InvalidArgument("name", "at most 128 characters")
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		return nil, model.RateLimited("too many shop searches at once", time.Second)
	}
	return s.store.ListShops(ctx, name, MaxShopList)
}

// ShopFinder is the part of ShopStore that publishing a voucher needs.
type ShopFinder interface {
	GetShop(ctx context.Context, id int64) (*model.Shop, error)
}

// Shops reads, creates and updates shops.
type Shops struct {
	store ShopStore
	now   func() time.Time
}

// NewShops returns a Shops service. now is the clock (time.Now in
// production).
func NewShops(store ShopStore, now func() time.Time) *Shops {
	return &Shops{store: store, now: now}
}

// Limits of the shop's fields: the column sizes of tb_shop, counted in
// characters like MySQL's VARCHAR, and the ranges the frontend sends.
const (
	maxShopName      = 128
	maxShopImages    = 1024
	maxShopArea      = 128
	maxShopAddress   = 255
	maxShopOpenHours = 32
	maxShopAvgPrice  = 1_000_000_000
	maxShopCount     = math.MaxInt32 // sold, comments: an INT column
	maxShopScore     = 50            // 5 points times ten
)

// Get returns the shop with the id (model.ErrShopNotFound when none).
func (s *Shops) Get(ctx context.Context, id int64) (*model.Shop, error) {
	if id <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	return s.store.GetShop(ctx, id)
}

// Create validates and stores a shop and returns its id. Name, typeId,
// address, x and y are required; the other fields default to empty or 0.
func (s *Shops) Create(ctx context.Context, p model.ShopPatch) (int64, error) {
	required := []struct {
		name    string
		missing bool
	}{
		{"name", p.Name == nil}, {"typeId", p.TypeID == nil}, {"address", p.Address == nil},
		{"x", p.X == nil}, {"y", p.Y == nil},
	}
	for _, f := range required {
		if f.missing {
			return 0, model.InvalidArgument(f.name, "required")
		}
	}
	if err := ValidateShop(p); err != nil {
		return 0, err
	}
	now := s.now()
	shop := &model.Shop{
		Name: strings.TrimSpace(*p.Name), TypeID: *p.TypeID, Address: strings.TrimSpace(*p.Address),
		X: *p.X, Y: *p.Y, CreateTime: now, UpdateTime: now,
	}
	if p.Images != nil {
		shop.Images = normalizeImages(*p.Images)
	}
	if p.Area != nil {
		shop.Area = strings.TrimSpace(*p.Area)
	}
	if p.AvgPrice != nil {
		shop.AvgPrice = *p.AvgPrice
	}
	if p.Sold != nil {
		shop.Sold = *p.Sold
	}
	if p.Comments != nil {
		shop.Comments = *p.Comments
	}
	if p.Score != nil {
		shop.Score = *p.Score
	}
	if p.OpenHours != nil {
		shop.OpenHours = strings.TrimSpace(*p.OpenHours)
	}
	if err := s.store.CreateShop(ctx, shop); err != nil {
		return 0, err
	}
	return shop.ID, nil
}

// Update validates the patch and applies it to shop id
// (model.ErrShopNotFound when none). A patch that changes nothing is an
// input error.
func (s *Shops) Update(ctx context.Context, id int64, p model.ShopPatch) error {
	if id <= 0 {
		return model.InvalidArgument("id", "must be a positive number")
	}
	if p.Empty() {
		return model.InvalidArgument("body", "no field to update")
	}
	if err := ValidateShop(p); err != nil {
		return err
	}
	for _, f := range []**string{&p.Name, &p.Area, &p.Address, &p.OpenHours} {
		if *f != nil {
			v := strings.TrimSpace(**f)
			*f = &v
		}
	}
	if p.Images != nil {
		v := normalizeImages(*p.Images)
		p.Images = &v
	}
	return s.store.UpdateShop(ctx, id, p, s.now())
}

// ValidateShop checks the patch's non-nil fields; the error names the
// field at fault.
func ValidateShop(p model.ShopPatch) error {
	text := []struct {
		name     string
		v        *string
		max      int
		required bool
	}{
		{"name", p.Name, maxShopName, true},
		{"images", p.Images, maxShopImages, false},
		{"area", p.Area, maxShopArea, false},
		{"address", p.Address, maxShopAddress, true},
		{"openHours", p.OpenHours, maxShopOpenHours, false},
	}
	for _, f := range text {
		if f.v == nil {
			continue
		}
		v := strings.TrimSpace(*f.v)
		switch {
		case !utf8.ValidString(v):
			return model.InvalidArgument(f.name, "must be UTF-8 text")
		case f.required && v == "":
			return model.InvalidArgument(f.name, "must not be empty")
		case utf8.RuneCountInString(v) > f.max:
			return model.InvalidArgument(f.name, "at most "+strconv.Itoa(f.max)+" characters")
		case strings.ContainsRune(v, 0):
			return model.InvalidArgument(f.name, "must not contain NUL characters")
		}
	}
	if p.Images != nil {
		if v := strings.TrimSpace(*p.Images); v != "" {
			for _, img := range strings.Split(v, ",") {
				if strings.TrimSpace(img) == "" {
					return model.InvalidArgument("images", "a comma-separated list of image paths, none empty")
				}
			}
		}
	}
	switch {
	case p.TypeID != nil && *p.TypeID <= 0:
		return model.InvalidArgument("typeId", "must be a positive number")
	case p.X != nil && !(*p.X >= -180 && *p.X <= 180):
		return model.InvalidArgument("x", "must be a longitude from -180 to 180")
	case p.Y != nil && !(*p.Y >= -90 && *p.Y <= 90):
		return model.InvalidArgument("y", "must be a latitude from -90 to 90")
	case p.AvgPrice != nil && (*p.AvgPrice < 0 || *p.AvgPrice > maxShopAvgPrice):
		return model.InvalidArgument("avgPrice", "must be from 0 to 1000000000")
	case p.Sold != nil && (*p.Sold < 0 || *p.Sold > maxShopCount):
		return model.InvalidArgument("sold", "must be from 0 to 2147483647")
	case p.Comments != nil && (*p.Comments < 0 || *p.Comments > maxShopCount):
		return model.InvalidArgument("comments", "must be from 0 to 2147483647")
	case p.Score != nil && (*p.Score < 0 || *p.Score > maxShopScore):
		return model.InvalidArgument("score", "must be from 0 to 50 (points times ten)")
	}
	return nil
}

// normalizeImages trims the image paths of a comma-separated list.
func normalizeImages(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return strings.Join(parts, ",")
}
