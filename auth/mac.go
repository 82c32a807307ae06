package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
)

// macLen is the length of an encoded MAC (base64url, no padding).
var macLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// macState is a prepared HMAC of the admission key with its buffers, so
// that a check allocates nothing.
type macState struct {
	h   hash.Hash
	in  []byte
	sum [sha256.Size]byte
	enc []byte
}

// macState returns a prepared HMAC from the pool; Put it back when done.
func (a *Admissions) macState() *macState {
	if m, _ := a.macs.Get().(*macState); m != nil {
		return m
	}
	return &macState{h: hmac.New(sha256.New, a.key), enc: make([]byte, macLen)}
}

// encode returns the encoded MAC of body, or of body|seed when withSeed;
// the bytes are the state's own until its next use.
func (m *macState) encode(body, seed string, withSeed bool) []byte {
	m.in = append(m.in[:0], body...)
	if withSeed {
		m.in = append(m.in, '|')
		m.in = append(m.in, seed...)
	}
	m.h.Reset()
	m.h.Write(m.in)
	base64.RawURLEncoding.Encode(m.enc, m.h.Sum(m.sum[:0]))
	return m.enc
}

// equalMAC compares an encoded MAC with the client's in constant time.
func equalMAC(want []byte, got string) bool {
	if len(got) != len(want) {
		return false
	}
	var v byte
	for i := range want {
		v |= want[i] ^ got[i]
	}
	return v == 0
}
