package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Users stores users in tb_user.
type Users struct{ db *gorm.DB }

// NewUsers returns the user store.
func NewUsers(db *DB) *Users { return &Users{db: db.Gorm} }

// FindByPhone returns the user with phone or model.ErrUserNotFound.
func (r *Users) FindByPhone(ctx context.Context, phone string) (*model.User, error) {
	return takeOne[model.User](ctx, r.db, "phone", phone, model.ErrUserNotFound)
}

// FindByID returns the user with id or model.ErrUserNotFound.
func (r *Users) FindByID(ctx context.Context, id int64) (*model.User, error) {
	return takeOne[model.User](ctx, r.db, "id", id, model.ErrUserNotFound)
}

// Create inserts u. If a user with the same phone appeared meanwhile, u is
// filled from it instead.
func (r *Users) Create(ctx context.Context, u *model.User) error {
	now := time.Now()
	u.CreateTime, u.UpdateTime = now, now
	err := r.db.WithContext(ctx).Create(u).Error
	if err != nil && isUniqueViolation(err) {
		existing, ferr := r.FindByPhone(ctx, u.Phone)
		if ferr != nil {
			return ferr
		}
		*u = *existing
		return nil
	}
	return translate(err)
}

// EnsureUsers makes sure the users with the given phones exist, all with
// role, and returns them in the order of phones. It is what `seckill tokens`
// uses to prepare load-test users.
func (r *Users) EnsureUsers(ctx context.Context, phones []string, role string, nick func(i int) string) ([]model.User, error) {
	const batch = 500
	out := make([]model.User, 0, len(phones))
	for start := 0; start < len(phones); start += batch {
		end := min(start+batch, len(phones))
		chunk := phones[start:end]
		var existing []model.User
		if err := r.db.WithContext(ctx).Where("phone IN ?", chunk).Find(&existing).Error; err != nil {
			return nil, translate(err)
		}
		byPhone := make(map[string]model.User, len(existing))
		for _, u := range existing {
			if u.Role != role {
				return nil, fmt.Errorf("user %s exists with role %q, want %q", u.Phone, u.Role, role)
			}
			byPhone[u.Phone] = u
		}
		var missing []model.User
		now := time.Now()
		for i, p := range chunk {
			if _, ok := byPhone[p]; !ok {
				missing = append(missing, model.User{Phone: p, NickName: nick(start + i), Role: role, CreateTime: now, UpdateTime: now})
			}
		}
		if len(missing) > 0 {
			if err := r.db.WithContext(ctx).Create(&missing).Error; err != nil {
				return nil, translate(err)
			}
			for _, u := range missing {
				byPhone[u.Phone] = u
			}
		}
		for _, p := range chunk {
			out = append(out, byPhone[p])
		}
	}
	return out, nil
}
