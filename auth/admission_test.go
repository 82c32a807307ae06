package auth

import (
	"testing"
	"time"
)

// TestAdmissions: a token admits its user to its voucher until it
// expires, and nothing else: another user, voucher, key, a changed field
// or a truncated token.
func TestAdmissions(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := NewAdmissions("secret-one")
	tok := a.Sign(7, 42, now.Add(time.Minute))
	if !a.Valid(tok, 7, 42, now) {
		t.Fatalf("Valid(%q, 7, 42): got false, want true", tok)
	}
	tests := []struct {
		name          string
		a             *Admissions
		tok           string
		user, voucher int64
		at            time.Time
	}{
		{"expired", a, tok, 7, 42, now.Add(time.Minute)},
		{"another user", a, tok, 8, 42, now},
		{"another voucher", a, tok, 7, 43, now},
		{"another key", NewAdmissions("secret-two"), tok, 7, 42, now},
		{"the JWT secret itself", &Admissions{key: []byte("secret-one")}, tok, 7, 42, now},
		{"a later expiry", a, tok[:len("v1.42.7.")] + "9" + tok[len("v1.42.7."):], 7, 42, now},
		{"truncated", a, tok[:len(tok)-1], 7, 42, now},
		{"empty", a, "", 7, 42, now},
	}
	for _, tt := range tests {
		if tt.a.Valid(tt.tok, tt.user, tt.voucher, tt.at) {
			t.Errorf("%s: got valid, want refused", tt.name)
		}
		// Signed ignores the expiry only.
		if got, want := tt.a.Signed(tt.tok, tt.user, tt.voucher), tt.name == "expired"; got != want {
			t.Errorf("%s: Signed got %v, want %v", tt.name, got, want)
		}
	}
}
