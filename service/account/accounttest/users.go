package accounttest

import (
	"context"
	"sync"

	"seckill/model"
)

// Users is a account.UserStore over a map. Create numbers the users from
// Next on.
type Users struct {
	mu      sync.Mutex
	ByID    map[int64]model.User
	Next    int64
	Created int
	// FindErr, when set, is FindByPhone's error.
	FindErr error
}

// NewUsers returns an empty store that numbers the users after next.
func NewUsers(next int64) *Users { return &Users{ByID: map[int64]model.User{}, Next: next} }

// FindByPhone returns the user of phone or model.ErrUserNotFound.
func (f *Users) FindByPhone(_ context.Context, phone string) (*model.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.FindErr != nil {
		return nil, f.FindErr
	}
	for _, u := range f.ByID {
		if u.Phone == phone {
			return &u, nil
		}
	}
	return nil, model.ErrUserNotFound
}

// FindByID returns the user id or model.ErrUserNotFound.
func (f *Users) FindByID(_ context.Context, id int64) (*model.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.ByID[id]
	if !ok {
		return nil, model.ErrUserNotFound
	}
	return &u, nil
}

// Create numbers u and stores it.
func (f *Users) Create(_ context.Context, u *model.User) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ByID == nil {
		f.ByID = map[int64]model.User{}
	}
	f.Next++
	f.Created++
	u.ID = f.Next
	f.ByID[u.ID] = *u
	return nil
}
