package middleware

import (
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// ShedBuckets and ShedBucket are the window the shedder measures its
// drain rate over: 10 buckets of 100 ms, the last full second.
const (
	ShedBuckets = 10
	ShedBucket  = 100 * time.Millisecond
)

// ShedFloor is the limit the shedder never goes below: two commit groups
// of 64, so the group commit always has a full group waiting.
const ShedFloor = 128

// ShedRetryAfter is the wait a shed request is told (Retry-After).
const ShedRetryAfter = time.Second

// Shedder is an adaptive concurrency limit in the manner of BBR (Netflix's
// concurrency-limits, kratos' aegis): it admits a request while the requests
// in flight are fewer than the drain rate times the target. The drain rate
// is the most requests finished in one bucket of the last second. So the
// queue never holds more than the server clears in the target time
// (docs/operations.md, "Shedding a stampede").
type Shedder struct {
	target time.Duration
	now    func() time.Time

	mu       sync.Mutex
	inFlight int
	limit    int
	epoch    int64 // the bucket of now, counted from the zero time
	done     [ShedBuckets]int
}

// NewShedder returns a shedder that keeps the queue within target; now is
// the clock (nil: time.Now).
func NewShedder(target time.Duration, now func() time.Time) *Shedder {
	if now == nil {
		now = time.Now
	}
	return &Shedder{target: target, now: now, limit: ShedFloor}
}

// Allow admits a request, or refuses it (false) when the queue is full. An
// admitted request calls finish when it ends.
func (s *Shedder) Allow() (finish func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll()
	if s.inFlight >= s.limit {
		return nil, false
	}
	s.inFlight++
	return s.finish, true
}

// finish ends an admitted request.
func (s *Shedder) finish() {
	s.mu.Lock()
	s.roll()
	s.inFlight--
	s.done[s.epoch%ShedBuckets]++
	s.mu.Unlock()
}

// State is the requests in flight and the limit now.
func (s *Shedder) State() (inFlight, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll()
	return s.inFlight, s.limit
}

// roll moves the window to now, under mu. At a new bucket the limit is the
// busiest full bucket's rate times the target, at least ShedFloor.
func (s *Shedder) roll() {
	e := s.now().UnixNano() / int64(ShedBucket)
	if e == s.epoch {
		return
	}
	for i := s.epoch + 1; i <= e && i <= s.epoch+ShedBuckets; i++ {
		s.done[i%ShedBuckets] = 0
	}
	s.epoch = e
	peak := 0
	for i, n := range s.done {
		if int64(i) != e%ShedBuckets {
			peak = max(peak, n)
		}
	}
	s.limit = max(ShedFloor, int(int64(peak)*int64(s.target)/int64(ShedBucket)))
}

// Shed answers a request the shedder refuses at once with 503 UNAVAILABLE
// and Retry-After, before any work; shed counts it (nil: none). A nil
// shedder admits everything.
func Shed(s *Shedder, shed func(), fail FailFunc) gin.HandlerFunc {
	if s == nil {
		return func(c *gin.Context) { c.Next() }
	}
	refusal := model.Overloaded(ShedRetryAfter)
	return func(c *gin.Context) {
		finish, ok := s.Allow()
		if !ok {
			if shed != nil {
				shed()
			}
			fail(c, refusal)
			return
		}
		defer finish()
		c.Next()
	}
}
