package model

import (
	"errors"
	"time"
)

// ErrShopNotFound means no shop has the id.
var ErrShopNotFound = errors.New("shop not found")

// Shop is a row of tb_shop, the course's shop.
// Images is a comma-separated list of image paths, as the course stores it.
// Score is 1 to 5 points times ten, 0 for none yet.
type Shop struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement"`
	Name       string    `gorm:"column:name"`
	TypeID     int64     `gorm:"column:type_id"`
	Images     string    `gorm:"column:images"`
	Area       string    `gorm:"column:area"`
	Address    string    `gorm:"column:address"`
	X          float64   `gorm:"column:x"` // longitude
	Y          float64   `gorm:"column:y"` // latitude
	AvgPrice   int64     `gorm:"column:avg_price"`
	Sold       int       `gorm:"column:sold"`
	Comments   int       `gorm:"column:comments"`
	Score      int       `gorm:"column:score"`
	OpenHours  string    `gorm:"column:open_hours"`
	CreateTime time.Time `gorm:"column:create_time"`
	UpdateTime time.Time `gorm:"column:update_time"`
}

// TableName is the Heima table name.
func (Shop) TableName() string { return "tb_shop" }

// ShopPatch is a partial update of a shop: nil fields keep their value.
type ShopPatch struct {
	Name      *string
	TypeID    *int64
	Images    *string
	Area      *string
	Address   *string
	X, Y      *float64
	AvgPrice  *int64
	Sold      *int
	Comments  *int
	Score     *int
	OpenHours *string
}

// Empty reports whether the patch changes nothing.
func (p ShopPatch) Empty() bool {
	return p == ShopPatch{}
}
