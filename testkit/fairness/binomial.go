package fairness

import (
	"math"
	"slices"
)

// BinomialTwoSided is the exact two-sided p-value of k successes in n
// trials of probability p: the sum of the probabilities of every outcome
// no more likely than k (the method of R's binom.test).
func BinomialTwoSided(k, n int, p float64) float64 {
	at := binomialLogPMF(k, n, p)
	// A relative tolerance, as binom.test uses, so that outcomes exactly
	// as likely as k count despite rounding.
	const relErr = 1 + 1e-7
	sum := 0.0
	for i := 0; i <= n; i++ {
		if l := binomialLogPMF(i, n, p); l <= at+math.Log(relErr) {
			sum += math.Exp(l)
		}
	}
	return math.Min(sum, 1)
}

func binomialLogPMF(k, n int, p float64) float64 {
	lc, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return lc - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// BinomialRange is the range of k that BinomialTwoSided accepts at the
// level alpha (p-value at least alpha) for n trials of probability p; -1,
// -1 when none. It sums the same probabilities as BinomialTwoSided, sorted
// once, so it takes O(n log n), not O(n²).
func BinomialRange(n int, p, alpha float64) (lo, hi int) {
	const relErr = 1 + 1e-7
	logs := make([]float64, n+1)
	for i := range logs {
		logs[i] = binomialLogPMF(i, n, p)
	}
	sorted := slices.Clone(logs)
	slices.Sort(sorted)
	// below[j] is the sum of the j least likely outcomes' probabilities.
	below := make([]float64, n+2)
	for j, l := range sorted {
		below[j+1] = below[j] + math.Exp(l)
	}
	lo, hi = -1, -1
	for k, at := range logs {
		j, _ := slices.BinarySearchFunc(sorted, at+math.Log(relErr), func(e, t float64) int {
			if e <= t {
				return -1
			}
			return 1
		})
		if math.Min(below[j], 1) >= alpha {
			if lo < 0 {
				lo = k
			}
			hi = k
		}
	}
	return lo, hi
}
