package fairness

import "math"

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
