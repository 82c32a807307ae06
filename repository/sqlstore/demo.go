package sqlstore

import (
	"context"

	"gorm.io/gorm"
)

// demoMark is the name of the tb_seckill_meta row that records the
// development demo data: "claimed" while a process seeds it, then the ids.
const demoMark = "demo_seed"

// DemoMarks keeps the record of the demo data in tb_seckill_meta. Its
// primary key lets exactly one process claim the seed.
type DemoMarks struct {
	db   *gorm.DB
	name string
}

// NewDemoMarks returns the demo record store.
func NewDemoMarks(db *DB) *DemoMarks { return &DemoMarks{db: db.Gorm, name: demoMark} }

type demoRow struct {
	Name  string `gorm:"column:name;primaryKey"`
	Value string `gorm:"column:value"`
}

func (demoRow) TableName() string { return "tb_seckill_meta" }

// ClaimDemo inserts the claim. A row already there (a claim or a seed) is
// returned instead.
func (m *DemoMarks) ClaimDemo(ctx context.Context) (bool, string, error) {
	err := m.db.WithContext(ctx).Create(&demoRow{Name: m.name, Value: "claimed"}).Error
	if err == nil {
		return true, "", nil
	}
	if !isUniqueViolation(err) {
		return false, "", translate(err)
	}
	var row demoRow
	if err := m.db.WithContext(ctx).Where("name = ?", m.name).Take(&row).Error; err != nil {
		return false, "", translate(err)
	}
	return false, row.Value, nil
}

// SetDemo records value as the seed.
func (m *DemoMarks) SetDemo(ctx context.Context, value string) error {
	return translate(m.db.WithContext(ctx).Model(&demoRow{}).Where("name = ?", m.name).Update("value", value).Error)
}

// ReleaseDemo removes the record.
func (m *DemoMarks) ReleaseDemo(ctx context.Context) error {
	return translate(m.db.WithContext(ctx).Where("name = ?", m.name).Delete(&demoRow{}).Error)
}
