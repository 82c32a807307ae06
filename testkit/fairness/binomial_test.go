package fairness

import (
	"math"
	"testing"
)

// TestBinomialTwoSided against the same sum done exactly with Python's
// math.comb (the method of R's binom.test).
func TestBinomialTwoSided(t *testing.T) {
	tests := []struct {
		k, n int
		p    float64
		want float64
	}{
		{10, 500, 0.02, 1},          // exactly the expected count
		{3, 500, 0.02, 0.0232032},   // below the expected 10
		{20, 500, 0.02, 0.00358598}, // twice the expected 10
		{5, 10, 0.5, 1},             // symmetric
		{0, 10, 0.5, 0.001953125},   // 2 × 0.5^10
	}
	for _, tt := range tests {
		got := BinomialTwoSided(tt.k, tt.n, tt.p)
		if math.Abs(got-tt.want) > 1e-4*tt.want {
			t.Errorf("BinomialTwoSided(%d, %d, %g): got %.6g, want %.6g", tt.k, tt.n, tt.p, got, tt.want)
		}
	}
}

// TestBinomialRange against the k BinomialTwoSided accepts one by one.
func TestBinomialRange(t *testing.T) {
	for _, tt := range []struct {
		n     int
		p, at float64
	}{{500, 0.02, 0.05}, {500, 0.0025, 0.05}, {15, 0.5, 0.001}, {40, 0.5, 0.001}, {10, 0.5, 0.05}, {0, 0.3, 0.05}} {
		lo, hi := -1, -1
		for k := 0; k <= tt.n; k++ {
			if BinomialTwoSided(k, tt.n, tt.p) >= tt.at {
				if lo < 0 {
					lo = k
				}
				hi = k
			}
		}
		if gotLo, gotHi := BinomialRange(tt.n, tt.p, tt.at); gotLo != lo || gotHi != hi {
			t.Errorf("BinomialRange(%d, %g, %g): got %d..%d, want %d..%d", tt.n, tt.p, tt.at, gotLo, gotHi, lo, hi)
		}
	}
}
