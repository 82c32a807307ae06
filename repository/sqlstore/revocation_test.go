package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestRevocations: Revoke stores not_before and keeps a later one, NotBefore
// lists it, Access reads the role and the revocation in one read, on both
// databases.
func TestRevocations(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		users, rev := NewUsers(db), NewRevocations(db)
		u := &model.User{Phone: fmt.Sprintf("17%09d", rand.IntN(1_000_000_000)), Role: model.RoleAdmin}
		if err := users.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		role, nb, err := rev.Access(ctx, u.ID)
		if err != nil || role != model.RoleAdmin || !nb.IsZero() {
			t.Fatalf("Access before any revocation: got %q %v %v, want admin, zero", role, nb, err)
		}
		t1 := time.Unix(time.Now().Unix()+1, 0)
		if got, err := rev.Revoke(ctx, u.ID, t1); err != nil || !got.Equal(t1) {
			t.Fatalf("Revoke: got %v %v, want %v", got, err, t1)
		}
		if got, err := rev.Revoke(ctx, u.ID, t1.Add(-time.Hour)); err != nil || !got.Equal(t1) {
			t.Errorf("Revoke with an earlier time: got %v %v, want the later %v kept", got, err, t1)
		}
		t2 := t1.Add(time.Minute)
		if got, err := rev.Revoke(ctx, u.ID, t2); err != nil || !got.Equal(t2) {
			t.Errorf("Revoke with a later time: got %v %v, want %v", got, err, t2)
		}
		all, err := rev.NotBefore(ctx)
		if err != nil || !all[u.ID].Equal(t2) {
			t.Errorf("NotBefore: got %v for user %d (%v), want %v", all[u.ID], u.ID, err, t2)
		}
		if err := db.Gorm.Exec("UPDATE tb_user SET role = ? WHERE id = ?", model.RoleUser, u.ID).Error; err != nil {
			t.Fatal(err)
		}
		role, nb, err = rev.Access(ctx, u.ID)
		if err != nil || role != model.RoleUser || !nb.Equal(t2) {
			t.Errorf("Access after demotion: got %q %v %v, want user, %v", role, nb, err, t2)
		}
		if _, _, err := rev.Access(ctx, 1<<62); !errors.Is(err, model.ErrUserNotFound) {
			t.Errorf("Access of no user: got %v, want %v", err, model.ErrUserNotFound)
		}
	})
}
