package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestIssueParse(t *testing.T) {
	tok := NewTokens("s3cret", time.Hour)
	s, err := tok.Issue(42, "admin")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tok.Parse(s)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.UserID != 42 || c.Role != "admin" {
		t.Fatalf("got uid %d role %q, want 42 admin", c.UserID, c.Role)
	}
}

func TestParseRejects(t *testing.T) {
	tok := NewTokens("s3cret", time.Hour)
	good, err := tok.Issue(7, "user")
	if err != nil {
		t.Fatal(err)
	}
	other := NewTokens("other", time.Hour)
	wrongKey, _ := other.Issue(7, "user")
	expiredIssuer := NewTokens("s3cret", time.Hour)
	expiredIssuer.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	expired, _ := expiredIssuer.Issue(7, "user")

	claims := Claims{UserID: 7, Role: "admin", RegisteredClaims: jwt.RegisteredClaims{
		Issuer: Issuer, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour)),
	}}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString([]byte("s3cret"))
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, Claims{UserID: 7, RegisteredClaims: jwt.RegisteredClaims{Issuer: Issuer}}).SignedString([]byte("s3cret"))
	noUser, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: Issuer, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}}).SignedString([]byte("s3cret"))
	hs384, _ := jwt.NewWithClaims(jwt.SigningMethodHS384, claims).SignedString([]byte("s3cret"))
	sign := func(c Claims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte("s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	notYet := claims
	notYet.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Minute))
	otherIssuer := claims
	otherIssuer.Issuer = "other"
	justExpired := claims
	justExpired.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Second))
	big := claims
	big.Subject = strings.Repeat("x", 8<<10)
	oversizedForged, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, big).SignedString([]byte("other"))
	parts := strings.Split(good, ".")
	// The signature's last character with another high nibble: another MAC.
	sig := parts[2]
	flipped := parts[0] + "." + parts[1] + "." + sig[:len(sig)-1] + map[bool]string{true: "g", false: "A"}[sig[len(sig)-1] < 'g']
	tampered := parts[0] + "." + strings.TrimRight(parts[1], "=") + "x." + parts[2]

	tests := []struct {
		name, token string
	}{
		{"empty", ""},
		{"garbage", "not.a.token"},
		{"wrong key", wrongKey},
		{"expired", expired},
		{"alg none", none},
		{"alg HS512", hs512},
		{"alg HS384", hs384},
		{"not yet valid", sign(notYet)},
		{"other issuer", sign(otherIssuer)},
		{"expired a second ago", sign(justExpired)},
		{"oversized, wrong key", oversizedForged},
		{"signature's last character changed", flipped},
		{"four segments", good + ".x"},
		{"padded signature", good + "="},
		{"no expiry", noExp},
		{"no user", noUser},
		{"tampered payload", tampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tok.Parse(tt.token); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("got %v, want ErrInvalidToken", err)
			}
		})
	}
}

// TestIssuedAtOnBothPaths: the fast path and golang-jwt both return the
// token's iat (revocation compares it), to the second.
func TestIssuedAtOnBothPaths(t *testing.T) {
	tok := NewTokens("iat-secret", time.Hour)
	now := time.Unix(1_800_000_000, 0)
	tok.now = func() time.Time { return now.Add(300 * time.Millisecond) }
	s, err := tok.Issue(5, "user")
	if err != nil {
		t.Fatal(err)
	}
	fast, v := tok.parseFast(s)
	if v != accepted || fast.IssuedAt == nil || !fast.IssuedAt.Equal(now) {
		t.Errorf("fast path: got %v %+v, want accepted with iat %v", v, fast, now)
	}
	slow, err := tok.parseJWT(s)
	if err != nil || slow.IssuedAt == nil || !slow.IssuedAt.Equal(now) {
		t.Errorf("golang-jwt: got %+v %v, want iat %v", slow, err, now)
	}
}
