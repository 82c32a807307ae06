package middleware

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// ShedBuckets and ShedBucket are the window the shedder measures over:
// 100 buckets of 100 ms, the last 10 seconds (aegis' BBR's defaults).
const (
	ShedBuckets = 100
	ShedBucket  = 100 * time.Millisecond
)

// ShedFloor is the limit the shedder never goes below: two commit groups
// of 64, so the group commit always has a full group waiting.
const ShedFloor = 128

// ShedRetryAfter is the shortest wait a shed request is told
// (Retry-After), ShedRetrySpread the number of whole seconds its waits
// spread over: 1, 2 or 3 s, drawn at random, so that the buyers shed
// together do not all come back in the same instant.
const (
	ShedRetryAfter  = time.Second
	ShedRetrySpread = 3
)

// Shedder is an adaptive concurrency limit in the manner of BBR (kratos'
// aegis, Netflix's concurrency-limits): it admits a request while the
// requests in flight are fewer than the drain rate times the time one
// request takes without a queue, plus the target. The drain rate is the
// most requests finished in one bucket of the window; the time without a
// queue is the lowest bucket's mean time. So the queue never holds more
// than the server clears in the target time, and a slow dependency that
// queues nothing sheds nothing (docs/operations.md, "Shedding a stampede").
type Shedder struct {
	target time.Duration
	now    func() time.Time

	mu       sync.Mutex
	inFlight int
	limit    int
	epoch    int64 // the bucket of now, counted from the zero time
	buckets  [ShedBuckets]shedBucket
}

// shedBucket is what finished in one bucket: how many, and their total time.
type shedBucket struct {
	done  int
	total time.Duration
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
	start := s.now()
	s.roll(start)
	if s.inFlight >= s.limit {
		return nil, false
	}
	s.inFlight++
	return func() { s.finish(start) }, true
}

// finish ends a request admitted at start.
func (s *Shedder) finish(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.roll(now)
	s.inFlight--
	b := &s.buckets[s.epoch%ShedBuckets]
	b.done++
	b.total += now.Sub(start)
}

// State is the requests in flight and the limit now.
func (s *Shedder) State() (inFlight, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(s.now())
	return s.inFlight, s.limit
}

// roll moves the window to now, under mu. At a new bucket the limit is
// the busiest full bucket's rate times the lowest mean time plus the
// target, at least ShedFloor.
func (s *Shedder) roll(now time.Time) {
	e := now.UnixNano() / int64(ShedBucket)
	if e == s.epoch {
		return
	}
	for i := s.epoch + 1; i <= e && i <= s.epoch+ShedBuckets; i++ {
		s.buckets[i%ShedBuckets] = shedBucket{}
	}
	s.epoch = e
	peak, fastest := 0, time.Duration(-1)
	for i, b := range s.buckets {
		if int64(i) == e%ShedBuckets || b.done == 0 {
			continue
		}
		peak = max(peak, b.done)
		if mean := b.total / time.Duration(b.done); fastest < 0 || mean < fastest {
			fastest = mean
		}
	}
	s.limit = ShedFloor
	if peak > 0 {
		s.limit = max(ShedFloor, int(int64(peak)*int64(fastest+s.target)/int64(ShedBucket)))
	}
}

// Shed answers a request the shedder refuses at once with 503 UNAVAILABLE
// and Retry-After, before any work; shed counts it (nil: none). A nil
// shedder admits everything.
func Shed(s *Shedder, shed func(), fail FailFunc) gin.HandlerFunc {
	if s == nil {
		return func(c *gin.Context) { c.Next() }
	}
	var refusals [ShedRetrySpread]error
	for i := range refusals {
		refusals[i] = model.Overloaded(ShedRetryAfter + time.Duration(i)*time.Second)
	}
	return func(c *gin.Context) {
		finish, ok := s.Allow()
		if !ok {
			if shed != nil {
				shed()
			}
			fail(c, refusals[rand.IntN(ShedRetrySpread)])
			return
		}
		defer finish()
		c.Next()
	}
}
