package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzParse: Parse never panics and refuses every bad token with
// ErrInvalidToken. It accepts only unexpired HS256 tokens signed with the
// secret. They come from the seckill issuer, with a positive user id.
func FuzzParse(f *testing.F) {
	const secret = "fuzz-secret"
	tok := NewTokens(secret, time.Hour)
	good, err := tok.Issue(7, "user")
	if err != nil {
		f.Fatal(err)
	}
	admin, err := tok.Issue(9, "admin")
	if err != nil {
		f.Fatal(err)
	}
	sign := func(m jwt.SigningMethod, key any, c Claims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	future := jwt.NewNumericDate(time.Now().Add(time.Hour))
	claims := func(uid int64, iss string, exp *jwt.NumericDate) Claims {
		return Claims{UserID: uid, Role: "admin", RegisteredClaims: jwt.RegisteredClaims{Issuer: iss, ExpiresAt: exp}}
	}
	parts := strings.Split(good, ".")
	for _, s := range []string{
		good, admin, "", ".", "..", "a.b.c", "a.b", "a.b.c.d", good + "x", good[:len(good)-2],
		parts[0] + "." + parts[1] + ".", parts[0] + ".." + parts[2],
		"eyJhbGciOiJub25lIn0.eyJ1aWQiOjF9.", "eyJ.eyJ.sig", "Bearer " + good, " " + good,
		sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(1, Issuer, future)),
		sign(jwt.SigningMethodHS512, []byte(secret), claims(1, Issuer, future)),
		sign(jwt.SigningMethodHS384, []byte(secret), claims(1, Issuer, future)),
		sign(jwt.SigningMethodHS256, []byte("other"), claims(1, Issuer, future)),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(1, Issuer, nil)),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(1, Issuer, jwt.NewNumericDate(time.Unix(0, 0)))),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(1, "other", future)),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(0, Issuer, future)),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(-5, Issuer, future)),
		sign(jwt.SigningMethodHS256, []byte(secret), claims(1, Issuer, jwt.NewNumericDate(time.Unix(1<<40, 0)))),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tok.Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Parse(%q): got %v, want ErrInvalidToken", s, err)
			}
			if c != nil {
				t.Errorf("Parse(%q): got claims %+v with an error", s, c)
			}
			return
		}
		if c.UserID <= 0 || c.Issuer != Issuer || c.ExpiresAt == nil || !c.ExpiresAt.After(time.Now()) {
			t.Errorf("Parse(%q): accepted claims %+v", s, c)
		}
		// Accepted: the same string verifies as HS256 with the secret.
		if _, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return []byte(secret), nil },
			jwt.WithValidMethods([]string{"HS256"})); err != nil {
			t.Errorf("Parse(%q): accepted a token that does not verify as HS256: %v", s, err)
		}
	})
}
