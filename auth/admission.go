package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Admissions signs and checks the waiting room's admission tokens:
// v1.<voucherId>.<userId>.<expiresMs>.<mac>, the MAC an HMAC-SHA256 of the
// rest with a key derived from the JWT secret. A token is bound to one
// user and one voucher and lapses at its expiry.
type Admissions struct {
	key []byte
	// macs keeps prepared HMAC states of key (*macState): hmac.New hashes
	// the key's pads, a Reset does not.
	macs sync.Pool
}

// admissionLabel derives the admission key from the JWT secret, so that
// a JWT and an admission token are never signed with the same key.
const admissionLabel = "seckill waiting room admission"

// NewAdmissions returns the signer whose key is derived from secret.
func NewAdmissions(secret string) *Admissions {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(admissionLabel))
	return &Admissions{key: m.Sum(nil)}
}

// Sign returns the admission token of userID for voucherID, valid until
// expires.
func (a *Admissions) Sign(userID, voucherID int64, expires time.Time) string {
	body := "v1." + strconv.FormatInt(voucherID, 10) + "." + strconv.FormatInt(userID, 10) + "." +
		strconv.FormatInt(expires.UnixMilli(), 10)
	return body + "." + a.mac(body)
}

// Valid reports whether token admits userID to buy voucherID at now: well
// formed, signed with the key, for this user and voucher, not expired.
func (a *Admissions) Valid(token string, userID, voucherID int64, now time.Time) bool {
	exp, ok := a.signed(token, userID, voucherID)
	return ok && now.UnixMilli() < exp
}

// Signed reports whether token was signed for userID and voucherID, expired
// or not: the user was admitted once.
func (a *Admissions) Signed(token string, userID, voucherID int64) bool {
	_, ok := a.signed(token, userID, voucherID)
	return ok
}

// signed returns the expiry (Unix ms) of a token well formed and signed for
// userID and voucherID.
func (a *Admissions) signed(token string, userID, voucherID int64) (int64, bool) {
	i := strings.LastIndexByte(token, '.')
	if i < 0 || len(token) > 256 {
		return 0, false
	}
	body, mac := token[:i], token[i+1:]
	if !hmac.Equal([]byte(mac), []byte(a.mac(body))) {
		return 0, false
	}
	f := strings.Split(body, ".")
	if len(f) != 4 || f[0] != "v1" || f[1] != strconv.FormatInt(voucherID, 10) || f[2] != strconv.FormatInt(userID, 10) {
		return 0, false
	}
	exp, err := strconv.ParseInt(f[3], 10, 64)
	return exp, err == nil
}

func (a *Admissions) mac(body string) string {
	m := a.macState()
	defer a.macs.Put(m)
	return string(m.encode(body, "", false))
}
