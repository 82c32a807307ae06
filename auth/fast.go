package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The fast path verifies the tokens Issue signs without golang-jwt's generic
// decoding. It decides only what golang-jwt would surely decide the same way.
// What it decides, and why that is safe, is in docs/tokens.md.

// canonicalHeader is the header segment of every token Issue signs:
// base64url of {"alg":"HS256","typ":"JWT"}.
const canonicalHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// maxFastToken is the longest token the fast path looks at (ours are about
// 200 bytes); longer ones go to golang-jwt.
const maxFastToken = 1024

// sigLen is the length of an unpadded base64url HMAC-SHA256.
const sigLen = 43

// errBadSignature is the fast path's refusal: the same errors as
// golang-jwt's for a wrong signature.
var errBadSignature = fmt.Errorf("%w: %w: %w", ErrInvalidToken, jwt.ErrTokenSignatureInvalid, jwt.ErrSignatureInvalid)

// verdict is what the fast path decided.
type verdict uint8

const (
	undecided verdict = iota // golang-jwt decides
	accepted
	refused
)

// scratch is one verification's state, pooled per Tokens.
// It keeps the keyed HMAC, reset rather than rebuilt, and the buffers.
// So a verification allocates only the claims it returns.
type scratch struct {
	mac    hash.Hash
	token  [maxFastToken]byte
	sig    [sha256.Size]byte
	sum    [sha256.Size]byte
	claims [maxFastToken * 3 / 4]byte
}

func newScratchPool(secret []byte) *sync.Pool {
	return &sync.Pool{New: func() any { return &scratch{mac: hmac.New(sha256.New, secret)} }}
}

// parsed holds the claims and their dates in one allocation.
type parsed struct {
	c             Claims
	exp, iat, nbf jwt.NumericDate
}

// parseFast verifies token without golang-jwt when it can (see above).
func (t *Tokens) parseFast(token string) (*Claims, verdict) {
	if len(token) > maxFastToken {
		return nil, undecided
	}
	d1 := indexDot(token, 0)
	if d1 < 0 {
		return nil, undecided
	}
	d2 := indexDot(token, d1+1)
	if d2 < 0 || indexDot(token, d2+1) >= 0 || len(token)-d2-1 != sigLen {
		return nil, undecided
	}
	s := t.scratch.Get().(*scratch)
	defer t.scratch.Put(s)
	buf := s.token[:copy(s.token[:], token)]
	if n, err := base64.RawURLEncoding.Decode(s.sig[:], buf[d2+1:]); err != nil || n != sha256.Size {
		return nil, undecided
	}
	s.mac.Reset()
	s.mac.Write(buf[:d2])
	if !hmac.Equal(s.mac.Sum(s.sum[:0]), s.sig[:]) {
		return nil, refused
	}
	if token[:d1] != canonicalHeader {
		return nil, undecided
	}
	n, err := base64.RawURLEncoding.Decode(s.claims[:], buf[d1+1:d2])
	if err != nil {
		return nil, undecided
	}
	p := new(parsed)
	if !decodeClaims(s.claims[:n], p) {
		return nil, undecided
	}
	now := t.now()
	if p.c.ExpiresAt == nil || !now.Before(p.c.ExpiresAt.Time) ||
		p.c.NotBefore != nil && now.Before(p.c.NotBefore.Time) ||
		p.c.Issuer != Issuer || p.c.UserID <= 0 {
		return nil, undecided
	}
	return &p.c, accepted
}

// indexDot is the index of the first '.' of s from from on, or -1.
func indexDot(s string, from int) int {
	if i := strings.IndexByte(s[from:], '.'); i >= 0 {
		return from + i
	}
	return -1
}

// decodeClaims decodes b into p if b is a JSON object in the canonical form
// described above, as encoding/json would, and reports whether it was.
func decodeClaims(b []byte, p *parsed) bool {
	const (
		seenUID = 1 << iota
		seenRole
		seenIss
		seenSub
		seenJti
		seenExp
		seenIat
		seenNbf
	)
	var seen uint
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	for {
		key, ok := scanString(b, &i)
		if !ok || i >= len(b) || b[i] != ':' {
			return false
		}
		i++
		var bit uint
		switch string(key) {
		case "uid":
			bit = seenUID
			v, ok := scanInt(b, &i, 18)
			if !ok || v == 0 {
				return false
			}
			p.c.UserID = v
		case "exp", "iat", "nbf":
			v, ok := scanInt(b, &i, 15)
			if !ok {
				return false
			}
			d := jwt.NumericDate{Time: time.Unix(v, 0).Truncate(jwt.TimePrecision)}
			switch key[0] {
			case 'e':
				bit, p.exp, p.c.ExpiresAt = seenExp, d, &p.exp
			case 'i':
				bit, p.iat, p.c.IssuedAt = seenIat, d, &p.iat
			default:
				bit, p.nbf, p.c.NotBefore = seenNbf, d, &p.nbf
			}
		case "role", "iss", "sub", "jti":
			v, ok := scanString(b, &i)
			if !ok {
				return false
			}
			switch string(key) {
			case "role":
				bit, p.c.Role = seenRole, intern(v)
			case "iss":
				bit, p.c.Issuer = seenIss, intern(v)
			case "sub":
				bit, p.c.Subject = seenSub, string(v)
			default:
				bit, p.c.ID = seenJti, string(v)
			}
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i == len(b)-1
		default:
			return false
		}
	}
}

// intern returns the constant for the usual roles and the issuer, a copy
// otherwise.
func intern(v []byte) string {
	switch string(v) {
	case "user":
		return "user"
	case "admin":
		return "admin"
	case Issuer:
		return Issuer
	}
	return string(v)
}

// scanString reads a string of printable ASCII without escapes at b[*i] and
// returns its contents.
func scanString(b []byte, i *int) ([]byte, bool) {
	if *i >= len(b) || b[*i] != '"' {
		return nil, false
	}
	start := *i + 1
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			*i = j + 1
			return b[start:j], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// scanInt reads a non-negative JSON integer of at most maxDigits digits
// without sign, fraction or exponent at b[*i].
func scanInt(b []byte, i *int, maxDigits int) (int64, bool) {
	j := *i
	var v int64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' && j-*i < maxDigits {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	switch {
	case j == *i, // no digit
		b[*i] == '0' && j-*i > 1, // leading zero: not JSON
		j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E'):
		return 0, false
	}
	*i = j
	return v, true
}
