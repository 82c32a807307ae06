package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Revocations stores token revocations in tb_token_revocation: a user's
// tokens issued before its not_before (Unix seconds) are refused.
type Revocations struct{ db *gorm.DB }

// NewRevocations returns the revocation store.
func NewRevocations(db *DB) *Revocations { return &Revocations{db: db.Gorm} }

// Revoke records that userID's tokens issued before notBefore (whole
// seconds) are refused and returns the stored not_before: a later one
// already stored is kept.
func (r *Revocations) Revoke(ctx context.Context, userID int64, notBefore time.Time) (time.Time, error) {
	q := "INSERT INTO tb_token_revocation (user_id, not_before) VALUES (?, ?) " +
		"ON DUPLICATE KEY UPDATE not_before = GREATEST(not_before, VALUES(not_before))"
	if r.db.Dialector.Name() == "sqlite" {
		q = "INSERT INTO tb_token_revocation (user_id, not_before) VALUES (?, ?) " +
			"ON CONFLICT (user_id) DO UPDATE SET not_before = MAX(not_before, excluded.not_before), update_time = CURRENT_TIMESTAMP"
	}
	db := r.db.WithContext(ctx)
	if err := db.Exec(q, userID, notBefore.Unix()).Error; err != nil {
		return time.Time{}, translate(err)
	}
	var stored int64
	if err := db.Raw("SELECT not_before FROM tb_token_revocation WHERE user_id = ?", userID).Scan(&stored).Error; err != nil {
		return time.Time{}, translate(err)
	}
	return time.Unix(stored, 0), nil
}

// NotBefore returns every revocation: user id to not_before.
func (r *Revocations) NotBefore(ctx context.Context) (map[int64]time.Time, error) {
	rows, err := r.db.WithContext(ctx).Raw("SELECT user_id, not_before FROM tb_token_revocation").Rows()
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[int64]time.Time)
	for rows.Next() {
		var id, nb int64
		if err := rows.Scan(&id, &nb); err != nil {
			return nil, translate(err)
		}
		out[id] = time.Unix(nb, 0)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// Access returns userID's current role and its not_before (zero when not
// revoked) in one read, or model.ErrUserNotFound.
func (r *Revocations) Access(ctx context.Context, userID int64) (role string, notBefore time.Time, err error) {
	var row struct {
		Role      string
		NotBefore sql.NullInt64
	}
	res := r.db.WithContext(ctx).Raw("SELECT u.role AS role, r.not_before AS not_before FROM tb_user u "+
		"LEFT JOIN tb_token_revocation r ON r.user_id = u.id WHERE u.id = ?", userID).Scan(&row)
	if res.Error != nil {
		return "", time.Time{}, translate(res.Error)
	}
	if res.RowsAffected == 0 {
		return "", time.Time{}, model.ErrUserNotFound
	}
	if row.NotBefore.Valid {
		notBefore = time.Unix(row.NotBefore.Int64, 0)
	}
	return row.Role, notBefore, nil
}
