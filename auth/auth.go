// Package auth issues and verifies the service's JSON Web Tokens: HS256 only,
// typed claims carrying the user id and role, always with an expiry.
package auth

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is the iss claim of every token.
const Issuer = "seckill"

// ErrInvalidToken is returned for any token that does not verify: malformed,
// wrongly signed, signed with another algorithm or none, expired.
var ErrInvalidToken = errors.New("auth: invalid token")

// Claims are the claims of a seckill token.
type Claims struct {
	UserID int64  `json:"uid"`
	Role   string `json:"role"`
	jwt.RegisteredClaims
}

// Tokens signs and verifies tokens with one HMAC secret.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	parser *jwt.Parser
	// scratch pools the fast path's keyed HMACs and buffers (fast.go).
	scratch *sync.Pool
}

// NewTokens returns a Tokens using secret, issuing tokens valid for ttl.
func NewTokens(secret string, ttl time.Duration) *Tokens {
	t := &Tokens{secret: []byte(secret), ttl: ttl, now: time.Now, scratch: newScratchPool([]byte(secret))}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(Issuer),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t
}

// Issue returns a signed token for the user.
func (t *Tokens) Issue(userID int64, role string) (string, error) {
	now := t.now()
	claims := Claims{
		UserID: userID,
		Role:   role,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   strconv.FormatInt(userID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.ttl)),
		},
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}

// Parse verifies token and returns its claims, or ErrInvalidToken.
// The tokens Issue signs, and forged signatures, take a fast path (fast.go).
// golang-jwt decides every other token.
func (t *Tokens) Parse(token string) (*Claims, error) {
	switch c, v := t.parseFast(token); v {
	case accepted:
		return c, nil
	case refused:
		return nil, errBadSignature
	}
	return t.parseJWT(token)
}

// parseJWT is Parse with golang-jwt alone: the reference the fast path is
// held to.
func (t *Tokens) parseJWT(token string) (*Claims, error) {
	var c Claims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if c.UserID <= 0 {
		return nil, fmt.Errorf("%w: no user id", ErrInvalidToken)
	}
	return &c, nil
}
