package auth

import (
	"syscall"
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

// BenchmarkTokenCheck is the auth middleware's token check on the purchase
// path: a fresh token Issue signed, verified by Parse (the fast path) and by
// parseJWT (golang-jwt alone). Both return the same typed claims, checked for
// alg, exp, iss and uid. cpu-ns/op is the process's CPU, garbage collection
// included. docs/tokens.md relates the two to a purchase.
func BenchmarkTokenCheck(b *testing.B) {
	tok := NewTokens("bench-secret", time.Hour)
	good, err := tok.Issue(123456789, "user")
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct {
		name  string
		parse func(string) (*Claims, error)
	}{{"fast", tok.Parse}, {"jwt", tok.parseJWT}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if c, err := p.parse(good); err != nil || c.UserID != 123456789 {
					b.Fatal(c, err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
