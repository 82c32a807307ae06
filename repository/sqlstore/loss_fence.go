package sqlstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"seckill/model"
)

// lossFenceName is the tb_seckill_meta row that holds the loss fence.
const lossFenceName = "async_loss_fence"

// LossFence is the fence between a consumer's read of stream entries and the
// write of their orders. Every rebuild from the facts moves it. A write
// checks, under a shared lock, that it still holds the value read before
// the entries. docs/async.md ("the loss fence") says why.
type LossFence struct{ db *gorm.DB }

// NewLossFence returns the loss fence kept in db.
func NewLossFence(db *DB) *LossFence { return &LossFence{db: db.Gorm} }

// Current returns the fence's value. It creates the fence when absent.
func (f *LossFence) Current(ctx context.Context) (string, error) {
	if err := f.ensure(ctx); err != nil {
		return "", err
	}
	var row namedValueRow
	if err := f.db.WithContext(ctx).Where("name = ?", lossFenceName).Take(&row).Error; err != nil {
		return "", translate(err)
	}
	return row.Value, nil
}

// Move gives the fence a new value. The update waits for every write that
// checked the old value to commit or roll back. Writes checking after it
// find the new value and are refused.
func (f *LossFence) Move(ctx context.Context) error {
	if err := f.ensure(ctx); err != nil {
		return err
	}
	err := f.db.WithContext(ctx).Exec("UPDATE tb_seckill_meta SET value = ? WHERE name = ?", rand.Text(), lossFenceName).Error
	return translate(err)
}

// ensure creates the fence with a random value unless it exists.
func (f *LossFence) ensure(ctx context.Context) error {
	err := f.db.WithContext(ctx).Create(&namedValueRow{Name: lossFenceName, Value: rand.Text()}).Error
	if err != nil && isUniqueViolation(err) {
		return nil
	}
	return translate(err)
}

// checkLossFence holds the fence under a shared lock until tx ends. It
// refuses with model.ErrLossFenceMoved when the fence's value is not want.
// An empty want checks nothing (tests that do not read entries).
func checkLossFence(tx *gorm.DB, want string) error {
	if want == "" {
		return nil
	}
	q := "SELECT value FROM tb_seckill_meta WHERE name = ?"
	if tx.Dialector.Name() != "sqlite" {
		// SQLite has one writer at a time: its transactions never overlap.
		q += " LOCK IN SHARE MODE"
	}
	var vals []string
	if err := tx.Raw(q, lossFenceName).Scan(&vals).Error; err != nil {
		return err
	}
	if len(vals) == 0 || vals[0] != want {
		return fmt.Errorf("database: %w", model.ErrLossFenceMoved)
	}
	return nil
}

// isFenceMoved reports whether err is the fence's refusal.
func isFenceMoved(err error) bool { return errors.Is(err, model.ErrLossFenceMoved) }
