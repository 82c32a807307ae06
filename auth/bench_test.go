package auth

import (
	"testing"
	"time"
)

// BenchmarkParse measures the verification of a fresh token (the hot path of
// every authenticated request), and of a token with a wrong signature.
func BenchmarkParse(b *testing.B) {
	tok := NewTokens("bench-secret", time.Hour)
	good, err := tok.Issue(123456789, "user")
	if err != nil {
		b.Fatal(err)
	}
	forged, err := NewTokens("other-secret", time.Hour).Issue(123456789, "user")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tok.Parse(good); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wrong-signature", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tok.Parse(forged); err == nil {
				b.Fatal("accepted a forged token")
			}
		}
	})
	b.Run("valid-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := tok.Parse(good); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
