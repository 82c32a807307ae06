package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/auth"
	"seckill/middleware"
	"seckill/model"
)

// revokedSet is a Revocations refusing the tokens of its users issued
// before their time.
type revokedSet map[int64]time.Time

func (s revokedSet) Revoked(userID int64, iat time.Time) bool {
	nb, ok := s[userID]
	return ok && iat.Before(nb)
}

// TestAuthRevoked: a token revoked in the set is refused with UNAUTHORIZED.
// Tokens issued after their user's revocation, and other users', pass.
// Their iat is in the context.
func TestAuthRevoked(t *testing.T) {
	tokens := auth.NewTokens("mw-secret", time.Hour)
	old, other := issue(t, tokens, 7, model.RoleUser), issue(t, tokens, 8, model.RoleUser)
	set := revokedSet{7: time.Now().Add(2 * time.Second).Truncate(time.Second)}
	fr := &failRecorder{}
	var got middleware.User
	r := gin.New()
	r.GET("/x", middleware.Auth(tokens, set, fr.fail), func(c *gin.Context) {
		got, _ = middleware.UserFrom(c.Request.Context())
		c.Status(http.StatusOK)
	})
	if rec := serve(t, r, http.MethodGet, "/x", old); rec.Code != 599 || len(fr.errs) != 1 || !errors.Is(fr.errs[0], model.ErrUnauthorized) {
		t.Errorf("revoked token: got %d %v, want one %v", rec.Code, fr.errs, model.ErrUnauthorized)
	}
	fr.errs = nil
	if rec := serve(t, r, http.MethodGet, "/x", other); rec.Code != http.StatusOK || got.ID != 8 || got.IssuedAt.IsZero() {
		t.Errorf("other user's token: got %d %+v %v, want 200 with user 8 and its iat", rec.Code, got, fr.errs)
	}
	set[7] = time.Now().Add(-time.Hour)
	if rec := serve(t, r, http.MethodGet, "/x", old); rec.Code != http.StatusOK {
		t.Errorf("token issued after the revocation: got %d %v, want 200", rec.Code, fr.errs)
	}
}

// adminCheck is an AdminCheck answering err and recording its arguments.
type adminCheck struct {
	err    error
	userID int64
	iat    time.Time
}

func (a *adminCheck) CheckAdmin(_ context.Context, userID int64, iat time.Time) error {
	a.userID, a.iat = userID, iat
	return a.err
}

// TestAdminCheck: an admin token passes only when the check does.
// The check's error is what fails: forbidden, unauthorized or unavailable.
// A user token is refused before any check.
func TestAdminCheck(t *testing.T) {
	iat := time.Unix(1_800_000_000, 0)
	for _, tt := range []struct {
		name    string
		role    string
		err     error
		wantErr error
		checked bool
	}{
		{name: "admin", role: model.RoleAdmin, checked: true},
		{name: "demoted", role: model.RoleAdmin, err: model.ErrForbidden, wantErr: model.ErrForbidden, checked: true},
		{name: "revoked", role: model.RoleAdmin, err: model.ErrUnauthorized, wantErr: model.ErrUnauthorized, checked: true},
		{name: "database down", role: model.RoleAdmin, err: model.Unavailable(errors.New("down")), wantErr: model.ErrUnavailable, checked: true},
		{name: "user token", role: model.RoleUser, wantErr: model.ErrForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fr := &failRecorder{}
			check := &adminCheck{err: tt.err}
			reached := false
			r := gin.New()
			r.GET("/x", func(c *gin.Context) {
				c.Request = c.Request.WithContext(middleware.WithUser(c.Request.Context(), middleware.User{ID: 9, Role: tt.role, IssuedAt: iat}))
			}, middleware.Admin(check, fr.fail), func(c *gin.Context) { reached = true })
			serve(t, r, http.MethodGet, "/x", "")
			if tt.checked != (check.userID == 9 && check.iat.Equal(iat)) {
				t.Errorf("check called with user %d iat %v, want called %v with 9 and %v", check.userID, check.iat, tt.checked, iat)
			}
			if tt.wantErr == nil {
				if !reached || len(fr.errs) != 0 {
					t.Errorf("got reached %v, fail %v, want reached", reached, fr.errs)
				}
				return
			}
			if reached || len(fr.errs) != 1 || !errors.Is(fr.errs[0], tt.wantErr) {
				t.Errorf("got reached %v, fail %v, want one %v", reached, fr.errs, tt.wantErr)
			}
		})
	}
}
