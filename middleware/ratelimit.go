package middleware

import (
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// RateLimiter allows each user at most limit requests per one-second window,
// in this process (each instance counts its own). It runs after Auth. A
// limit of zero or less means no limit.
type RateLimiter struct {
	limit int
	now   func() time.Time

	mu     sync.Mutex
	window int64 // unix second of the current window
	counts map[int64]int
}

// NewRateLimiter returns a limiter of limit requests per user per second.
func NewRateLimiter(limit int, now func() time.Time) *RateLimiter {
	return &RateLimiter{limit: limit, now: now, counts: make(map[int64]int)}
}

// Allow counts one request of user and reports whether it is within the limit.
func (r *RateLimiter) Allow(user int64) bool {
	if r.limit <= 0 {
		return true
	}
	sec := r.now().Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sec != r.window {
		r.window = sec
		clear(r.counts)
	}
	r.counts[user]++
	return r.counts[user] <= r.limit
}

// Handler refuses requests over the limit with RATE_LIMITED.
func (r *RateLimiter) Handler(fail FailFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if r.limit > 0 {
			u, _ := UserFrom(c.Request.Context())
			if !r.Allow(u.ID) {
				fail(c, model.ErrRateLimited)
				return
			}
		}
		c.Next()
	}
}
