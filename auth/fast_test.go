package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// diffSecret and diffNow are the secret and the clock of the differential
// tests. diffNow has a fraction of a second. So exp equal to its second is
// expired, and its second + 1 is not.
const diffSecret = "diff-secret"

var diffNow = time.Unix(1_800_000_000, 500_000_000)

func diffTokens() *Tokens {
	tok := NewTokens(diffSecret, time.Hour)
	tok.now = func() time.Time { return diffNow }
	return tok
}

// signRaw signs header and payload (JSON text, any bytes) as HS256 with key.
func signRaw(key, header, payload string) string {
	enc := base64.RawURLEncoding
	s := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(s))
	return s + "." + enc.EncodeToString(m.Sum(nil))
}

// sameVerdict fails t unless Parse (fast path, then golang-jwt) and
// parseJWT (golang-jwt alone) both refuse token, or both accept it with the
// same claims.
func sameVerdict(t *testing.T, tok *Tokens, token string) {
	t.Helper()
	got, gotErr := tok.Parse(token)
	want, wantErr := tok.parseJWT(token)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Errorf("%q: Parse: %v, golang-jwt: %v", token, gotErr, wantErr)
	case gotErr != nil:
		if !errors.Is(gotErr, ErrInvalidToken) || got != nil {
			t.Errorf("%q: Parse refused with claims %+v, error %v; want nil, ErrInvalidToken", token, got, gotErr)
		}
	case !reflect.DeepEqual(got, want):
		t.Errorf("%q: Parse claims %+v, golang-jwt %+v", token, got, want)
	}
}

const canonicalHeaderJSON = `{"alg":"HS256","typ":"JWT"}`

var (
	sec          = diffNow.Unix()
	exp          = strconv.FormatInt(sec+3600, 10)
	canonicalPay = `{"uid":7,"role":"user","iss":"seckill","sub":"7","exp":` + exp + `,"iat":` + strconv.FormatInt(sec, 10) + `}`
)

// diffHeaders and diffPayloads are the header and claims texts the
// differential tests sign: the canonical ones and their neighbours.
var diffHeaders = []string{
	canonicalHeaderJSON, `{"typ":"JWT","alg":"HS256"}`, `{"alg":"HS256"}`, `{"alg":"none"}`, `{"alg":"HS512"}`,
	`{"alg":"hs256"}`, `{"alg":"HS256","alg":"none"}`, `{"alg":"none","alg":"HS256"}`, `null`, `{}`, ``,
	`{"alg":"HS256","kid":"x"}`, `{"ALG":"HS256"}`, `{"alg":"HS256","typ":"JWT"} `, `{"alg":"HS256","crit":["exp"]}`,
}

func diffPayloads() []string {
	s := strconv.FormatInt(sec, 10)
	at := func(d int64) string { return strconv.FormatInt(sec+d, 10) }
	claims := func(kv ...string) string { return "{" + strings.Join(kv, ",") + "}" }
	uid, role, iss, sub, ex := `"uid":7`, `"role":"user"`, `"iss":"seckill"`, `"sub":"7"`, `"exp":`+exp
	p := []string{
		canonicalPay,
		claims(uid, role, iss, ex),
		claims(ex, iss, role, uid),
		claims(`"uid":123456789012345678`, `"role":"admin"`, iss, ex),
		claims(`"uid":1234567890123456789`, role, iss, ex),
		claims(`"uid":9223372036854775807`, role, iss, ex),
		claims(`"uid":9223372036854775808`, role, iss, ex),
		claims(`"uid":0`, role, iss, ex), claims(`"uid":-7`, role, iss, ex), claims(`"uid":07`, role, iss, ex),
		claims(`"uid":7.0`, role, iss, ex), claims(`"uid":7e0`, role, iss, ex), claims(`"uid":"7"`, role, iss, ex),
		claims(`"uid":null`, role, iss, ex), claims(role, iss, ex),
		claims(uid, `"uid":8`, role, iss, ex), claims(uid, `"UID":8`, role, iss, ex), claims(`"Uid":7`, role, iss, ex),
		claims(uid, role, `"role":"admin"`, iss, ex), claims(uid, `"Role":"admin"`, iss, ex),
		claims(uid, role, iss, ex, `"exp":`+at(-10)), claims(uid, role, iss, `"exp":`+at(-10), ex),
		claims(uid, role, iss), claims(uid, role, iss, `"exp":null`), claims(uid, role, iss, `"exp":"`+exp+`"`),
		claims(uid, role, iss, `"exp":`+exp+`.5`), claims(uid, role, iss, `"exp":`+exp+`.0`), claims(uid, role, iss, `"exp":1e10`),
		claims(uid, role, iss, `"exp":`+exp+`e0`), claims(uid, role, iss, `"exp":1e300`), claims(uid, role, iss, `"exp":1e400`),
		claims(uid, role, iss, `"exp":-1`), claims(uid, role, iss, `"exp":0`), claims(uid, role, iss, `"exp":`+s),
		claims(uid, role, iss, `"exp":`+at(1)), claims(uid, role, iss, `"exp":`+at(-1)), claims(uid, role, iss, `"exp":9999999999999999`),
		claims(uid, role, iss, `"exp":999999999999999`), claims(uid, role, iss, `"EXP":`+exp), claims(uid, role, iss, `"exp":0`+exp),
		claims(uid, role, iss, ex, `"nbf":`+at(1)), claims(uid, role, iss, ex, `"nbf":`+s), claims(uid, role, iss, ex, `"nbf":`+at(-1)),
		claims(uid, role, iss, ex, `"nbf":null`), claims(uid, role, iss, ex, `"nbf":"x"`),
		claims(uid, role, iss, ex, `"iat":`+at(3600*24)), claims(uid, role, iss, ex, `"iat":"x"`), claims(uid, role, iss, ex, `"iat":1.5`),
		claims(uid, role, ex), claims(uid, role, `"iss":"other"`, ex), claims(uid, role, `"iss":""`, ex),
		claims(uid, role, `"iss":"Seckill"`, ex), claims(uid, role, `"iss":"seckil\u006c"`, ex), claims(uid, role, `"iss":null`, ex),
		claims(uid, role, `"ISS":"seckill"`, ex), claims(uid, role, iss, `"iss":"other"`, ex),
		claims(uid, `"role":"\u0061dmin"`, iss, ex), claims(uid, `"role":"ädmin"`, iss, ex), claims(uid, "\"role\":\"a\xffb\"", iss, ex),
		claims(uid, `"role":null`, iss, ex), claims(uid, `"role":5`, iss, ex), claims(uid, `"role":"a\"b"`, iss, ex),
		claims(uid, `"role":"tab	x"`, iss, ex), claims(uid, `"role":""`, iss, ex),
		claims(uid, role, iss, `"sub":7`, ex), claims(uid, role, iss, sub, `"sub":"8"`, ex), claims(uid, role, iss, `"sub":""`, ex),
		claims(uid, role, iss, ex, `"jti":"abc"`), claims(uid, role, iss, ex, `"jti":5`),
		claims(uid, role, iss, ex, `"aud":"x"`), claims(uid, role, iss, ex, `"aud":["a","b"]`), claims(uid, role, iss, ex, `"aud":[1]`),
		claims(uid, role, iss, ex, `"foo":1`), claims(uid, role, iss, ex, `"foo":{"uid":8}`), claims(`"x":"uid"`, uid, role, iss, ex),
		`{ "uid":7,"role":"user","iss":"seckill","exp":` + exp + `}`, `{"uid" :7,"role":"user","iss":"seckill","exp":` + exp + `}`,
		`{"uid":7,"role":"user","iss":"seckill","exp":` + exp + ` }`, `{"uid":7,"role":"user","iss":"seckill","exp":` + exp + "}\n",
		canonicalPay + "x", canonicalPay + "}", canonicalPay[:len(canonicalPay)-1] + ",}", canonicalPay[:len(canonicalPay)-1],
		`{}`, `[]`, `null`, ``, `{"uid":7,}`, `{,}`, `{"uid":7"role":"user"}`, `{"uid"7}`, `{"uid":}`,
	}
	return p
}

// TestParseFastDecides: the fast path decides the tokens Issue signs and forged
// signatures. On every neighbour of the canonical form it agrees with
// golang-jwt.
func TestParseFastDecides(t *testing.T) {
	tok := diffTokens()
	for _, role := range []string{"user", "admin", "auditor"} {
		for _, uid := range []int64{1, 7, 123456789, 1 << 40, 999999999999999999} {
			s, err := tok.Issue(uid, role)
			if err != nil {
				t.Fatal(err)
			}
			c, v := tok.parseFast(s)
			want, err := tok.parseJWT(s)
			if v != accepted || err != nil || !reflect.DeepEqual(c, want) {
				t.Errorf("issued %q: fast %+v %v, golang-jwt %+v %v; want the same claims, accepted", s, c, v, want, err)
			}
			forged := signRaw("other", canonicalHeaderJSON, canonicalPay)
			if _, v := tok.parseFast(forged); v != refused {
				t.Errorf("forged %q: got verdict %v, want refused", forged, v)
			}
		}
	}
	// The two low bits of the signature's last character are not part of
	// the MAC: golang-jwt ignores them, and so does the fast path.
	s := signRaw(diffSecret, canonicalHeaderJSON, canonicalPay)
	last := strings.IndexByte(base64URLAlphabet, s[len(s)-1])
	for i := last &^ 3; i < last&^3+4; i++ {
		sameVerdict(t, tok, s[:len(s)-1]+base64URLAlphabet[i:i+1])
	}
	for _, h := range diffHeaders {
		for _, p := range diffPayloads() {
			sameVerdict(t, tok, signRaw(diffSecret, h, p))
			sameVerdict(t, tok, signRaw("other", h, p))
		}
	}
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// FuzzParseDifferential: Parse and golang-jwt alone reach the same verdict and
// claims. The inputs are the raw string, and header and claims texts signed
// with the secret or another key.
func FuzzParseDifferential(f *testing.F) {
	tok := diffTokens()
	issued, err := tok.Issue(7, "user")
	if err != nil {
		f.Fatal(err)
	}
	for _, h := range diffHeaders {
		f.Add(h, canonicalPay, issued)
	}
	for _, p := range diffPayloads() {
		f.Add(canonicalHeaderJSON, p, signRaw(diffSecret, canonicalHeaderJSON, p))
	}
	for _, s := range []string{"", ".", "..", "a.b.c", issued + ".", issued + "=", issued[:len(issued)-1], "." + issued,
		strings.Replace(issued, ".", "\n.", 1), strings.Replace(issued, ".", ".\n", 1), issued[:len(issued)-10] + "\n" + issued[len(issued)-10:],
		issued + strings.Repeat("A", 2000)} {
		f.Add(canonicalHeaderJSON, canonicalPay, s)
	}
	f.Fuzz(func(t *testing.T, header, payload, raw string) {
		sameVerdict(t, tok, raw)
		sameVerdict(t, tok, signRaw(diffSecret, header, payload))
		sameVerdict(t, tok, signRaw("other", header, payload))
	})
}
