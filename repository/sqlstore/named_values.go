package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// NamedValues keeps named values of the service in tb_seckill_meta: the
// epoch).
type NamedValues struct{ db *gorm.DB }

// NewNamedValues returns the store of named values.
func NewNamedValues(db *DB) *NamedValues { return &NamedValues{db: db.Gorm} }

type namedValueRow struct {
	Name  string `gorm:"column:name;primaryKey"`
	Value string `gorm:"column:value"`
}

func (namedValueRow) TableName() string { return "tb_seckill_meta" }

// Get returns the value of name ("" when none).
func (m *NamedValues) Get(ctx context.Context, name string) (string, error) {
	var row namedValueRow
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
func (m *NamedValues) InsertIfAbsent(ctx context.Context, name, value string) error {
	err := m.db.WithContext(ctx).Create(&namedValueRow{Name: name, Value: value}).Error
	if err != nil && isUniqueViolation(err) {
		return nil
	}
	return translate(err)
}

// List returns the names and values of the rows whose name starts with
// prefix, which holds neither of LIKE's wildcards (% and _).
func (m *NamedValues) List(ctx context.Context, prefix string) (map[string]string, error) {
	if strings.ContainsAny(prefix, `%_\`) {
		return nil, fmt.Errorf("meta: list: prefix %q holds a LIKE wildcard", prefix)
	}
	var rows []namedValueRow
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
