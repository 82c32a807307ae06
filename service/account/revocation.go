package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"seckill/model"
)

// A revoked user's tokens issued before its not_before are refused. Admin
// routes read the revocation and the role from the database (AdminAccess).
// Other routes read an in-memory copy reloaded every period (RevocationSet).

// RevocationLister reads every revocation: user id to not_before.
type RevocationLister interface {
	NotBefore(ctx context.Context) (map[int64]time.Time, error)
}

// AccessStore reads a user's current role and not_before (zero when not
// revoked); model.ErrUserNotFound when no user has the id.
type AccessStore interface {
	Access(ctx context.Context, userID int64) (role string, notBefore time.Time, err error)
}

// RevocationWriter records a revocation, keeping a later not_before already
// stored, and returns the one stored.
type RevocationWriter interface {
	Revoke(ctx context.Context, userID int64, notBefore time.Time) (time.Time, error)
}

// revokedAt reports whether a token issued at iat is refused by notBefore
// (zero: no revocation). A zero iat (none in the token) is refused by any
// revocation.
func revokedAt(iat, notBefore time.Time) bool {
	return !notBefore.IsZero() && (iat.IsZero() || iat.Unix() < notBefore.Unix())
}

// NotBeforeOf is the not_before of a revocation made at t. It is t rounded up
// to the next whole second, since iat has second precision. So every token
// issued up to t is refused, and so is one issued in that second.
func NotBeforeOf(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// UserFinder reads a user; model.ErrUserNotFound when no user has the id.
type UserFinder interface {
	FindByID(ctx context.Context, id int64) (*model.User, error)
}

// Revocation is what RevokeTokens did.
type Revocation struct {
	User      model.User
	NotBefore time.Time
}

// RevokeTokens refuses every token of userID issued before now (rounded up
// to the next second) from now on.
func RevokeTokens(ctx context.Context, users UserFinder, store RevocationWriter, userID int64, now time.Time) (Revocation, error) {
	u, err := users.FindByID(ctx, userID)
	if err != nil {
		return Revocation{}, fmt.Errorf("user %d: %w", userID, err)
	}
	nb, err := store.Revoke(ctx, userID, NotBeforeOf(now))
	if err != nil {
		return Revocation{}, fmt.Errorf("revoke user %d: %w", userID, err)
	}
	return Revocation{User: *u, NotBefore: nb}, nil
}

// AdminAccess checks an admin token against the database: the user's
// current role and its revocation, in one read.
type AdminAccess struct{ Store AccessStore }

// CheckAdmin checks that the token of userID, issued at iat, still speaks for
// an admin. A revoked token or a gone user is model.ErrUnauthorized. A user no
// longer an admin is model.ErrForbidden. A database that cannot answer is an
// error wrapping model.ErrUnavailable.
func (a AdminAccess) CheckAdmin(ctx context.Context, userID int64, iat time.Time) error {
	role, nb, err := a.Store.Access(ctx, userID)
	switch {
	case errors.Is(err, model.ErrUserNotFound):
		return model.ErrUnauthorized
	case err != nil:
		return model.Unavailable(err)
	case revokedAt(iat, nb):
		return model.ErrUnauthorized
	case role != model.RoleAdmin:
		return model.ErrForbidden
	}
	return nil
}

// RevocationSet is this process's copy of every revocation, read without
// locks on each request and replaced whole by each reload.
type RevocationSet struct {
	store RevocationLister
	log   *slog.Logger
	set   atomic.Pointer[map[int64]time.Time]
	// warnEvery is the least time between two warnings of failed reloads.
	warnEvery time.Duration
	lastWarn  time.Time // Run's goroutine only
	failures  int       // failed reloads since the last warning
}

// NewRevocationSet returns an empty set reading store.
func NewRevocationSet(store RevocationLister, log *slog.Logger) *RevocationSet {
	s := &RevocationSet{store: store, log: log, warnEvery: time.Minute}
	s.set.Store(&map[int64]time.Time{})
	return s
}

// Revoked reports whether a token of userID issued at iat (zero when the
// token has none) is revoked, as of the last reload.
func (s *RevocationSet) Revoked(userID int64, iat time.Time) bool {
	return revokedAt(iat, (*s.set.Load())[userID])
}

// Load replaces the set with the store's revocations; on error it keeps the
// set it had.
func (s *RevocationSet) Load(ctx context.Context) error {
	m, err := s.store.NotBefore(ctx)
	if err != nil {
		return err
	}
	s.set.Store(&m)
	return nil
}

// Run reloads the set every period until ctx ends. A failed reload keeps the
// last set, so newer revocations wait for a good reload. Admin routes read the
// database and are not affected. It logs a warning at most once a minute while
// reloads fail.
func (s *RevocationSet) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, max(period, time.Second))
		err := s.Load(lctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.failures++
			if now := time.Now(); now.Sub(s.lastWarn) >= s.warnEvery {
				s.log.WarnContext(ctx, "token revocations: reload failed, keeping the last set",
					"err", err, "failures", s.failures, "revoked_users", len(*s.set.Load()))
				s.lastWarn, s.failures = now, 0
			}
		}
	}
}
