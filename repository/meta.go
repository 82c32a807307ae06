package repository

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Meta keeps named values of the service in tb_seckill_meta (the async
// epoch).
type Meta struct{ db *gorm.DB }

// NewMeta returns the meta store.
func NewMeta(db *DB) *Meta { return &Meta{db: db.Gorm} }

type metaRow struct {
	Name  string `gorm:"column:name;primaryKey"`
	Value string `gorm:"column:value"`
}

func (metaRow) TableName() string { return "tb_seckill_meta" }

// Get returns the value of name ("" when none).
func (m *Meta) Get(ctx context.Context, name string) (string, error) {
	var row metaRow
	err := m.db.WithContext(ctx).Where("name = ?", name).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", nil
	}
	if err != nil {
		return "", translate(err)
	}
	return row.Value, nil
}

// InsertIfAbsent stores value under name unless name has a value already
// (then it keeps the existing one: the first writer wins).
func (m *Meta) InsertIfAbsent(ctx context.Context, name, value string) error {
	err := m.db.WithContext(ctx).Create(&metaRow{Name: name, Value: value}).Error
	if err != nil && isUniqueViolation(err) {
		return nil
	}
	return translate(err)
}

// List returns the names and values of the rows whose name starts with
// prefix, which holds neither of LIKE's wildcards (% and _).
func (m *Meta) List(ctx context.Context, prefix string) (map[string]string, error) {
	if strings.ContainsAny(prefix, `%_\`) {
		return nil, fmt.Errorf("meta: list: prefix %q holds a LIKE wildcard", prefix)
	}
	var rows []metaRow
	err := m.db.WithContext(ctx).Where("name LIKE ?", prefix+"%").Find(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Value
	}
	return out, nil
}
