package model

import "time"

// Limit is a rate limit (GCRA): Burst events at once, then Rate events per
// Period.
type Limit struct {
	Rate   int
	Burst  int
	Period time.Duration
}
