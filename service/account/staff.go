package account

import (
	"context"
	"errors"
	"time"

	"seckill/model"
)

// StaffAccessStore reads a user's current role, not_before (zero when not
// revoked) and the shop it is staff of (0: none) in one read;
// model.ErrUserNotFound when no user has the id.
type StaffAccessStore interface {
	Access(ctx context.Context, userID int64) (role string, notBefore time.Time, shopID int64, err error)
}

// StaffAccess checks a staff token against the database on every
// redemption: the role, the revocation and the binding to the shop. So a
// staff member removed from a shop is refused at once, on every instance.
type StaffAccess struct{ Store StaffAccessStore }

// CheckStaff checks that the token of userID, issued at iat with role,
// still speaks for staff of shopID. A token of another role is
// model.ErrNotStaff without a read. A revoked token or a gone user is
// model.ErrUnauthorized; a user no longer staff, or staff of another
// shop, model.ErrNotStaff; a database that cannot answer, an error
// wrapping model.ErrUnavailable.
func (a StaffAccess) CheckStaff(ctx context.Context, userID int64, role string, iat time.Time, shopID int64) error {
	if role != model.RoleStaff {
		return model.ErrNotStaff
	}
	current, nb, bound, err := a.Store.Access(ctx, userID)
	switch {
	case errors.Is(err, model.ErrUserNotFound):
		return model.ErrUnauthorized
	case err != nil:
		return model.Unavailable(err)
	case revokedAt(iat, nb):
		return model.ErrUnauthorized
	case current != model.RoleStaff || bound != shopID:
		return model.ErrNotStaff
	}
	return nil
}
