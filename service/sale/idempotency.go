package sale

import (
	"context"
	"time"

	"seckill/model"
)

// IdempotencyStore keeps the Idempotency-Key records of every instance
// (*redisstore.Idempotency).
type IdempotencyStore interface {
	// Begin claims the user's key for a request with fingerprint fp, in
	// flight for lease, and returns the attempt's owner token; a key
	// claimed already returns its record instead. A user at the cap of
	// live keys gets a *model.RateLimitedError.
	Begin(ctx context.Context, userID int64, key, fp string, lease time.Duration) (owner string, prior *model.IdempotentRecord, err error)
	// Finish stores the answer of owner's attempt, kept for ttl.
	Finish(ctx context.Context, userID int64, key, owner string, status int, body []byte, ttl time.Duration) (bool, error)
	// Release gives the key up, so that a retry runs the request again.
	Release(ctx context.Context, userID int64, key, owner string) (bool, error)
	// Lookup reads the key's record without claiming it; nil for none.
	Lookup(ctx context.Context, userID int64, key string) (*model.IdempotentRecord, error)
}

// The rules of the answers kept (docs/api.md, "Idempotency-Key").
const (
	// DefaultIdempotencyTTL is how long an answer is kept when no TTL is
	// configured (SECKILL_IDEMPOTENCY_TTL).
	DefaultIdempotencyTTL = 24 * time.Hour
	// MaxKeptAnswer bounds the body of a kept answer; every answer of a
	// keyed route is far smaller, and a larger one is not kept.
	MaxKeptAnswer = 1 << 10
	// idempotencyGrace is added to the request timeout for the lease of an
	// attempt in flight: past it, a crashed attempt no longer blocks its key.
	idempotencyGrace = 10 * time.Second
)

// Idempotency keeps the answers of keyed requests, for the HTTP layer's
// Idempotency-Key: the lease of an attempt, what is kept and how long.
type Idempotency struct {
	store IdempotencyStore
	ttl   time.Duration
	lease time.Duration
}

// NewIdempotency returns the keyed answers on store, kept for ttl
// (DefaultIdempotencyTTL when 0), for requests that last at most
// requestTimeout.
func NewIdempotency(store IdempotencyStore, ttl, requestTimeout time.Duration) *Idempotency {
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	return &Idempotency{store: store, ttl: ttl, lease: requestTimeout + idempotencyGrace}
}

// Begin claims the user's key for the request fp: the attempt's owner, or
// the record the key holds (prior).
func (s *Idempotency) Begin(ctx context.Context, userID int64, key, fp string) (owner string, prior *model.IdempotentRecord, err error) {
	return s.store.Begin(ctx, userID, key, fp, s.lease)
}

// End ends owner's attempt: its answer is kept when it succeeded (status
// 2xx, ok) within MaxKeptAnswer; otherwise the key is given up, so that a
// retry runs the request again. false when the attempt no longer held the
// key (its lease ran out).
func (s *Idempotency) End(ctx context.Context, userID int64, key, owner string, ok bool, status int, body []byte) (bool, error) {
	if ok && status >= 200 && status < 300 && len(body) <= MaxKeptAnswer {
		return s.store.Finish(ctx, userID, key, owner, status, body, s.ttl)
	}
	return s.store.Release(ctx, userID, key, owner)
}

// Lookup reads the key's record without claiming it; nil for none.
func (s *Idempotency) Lookup(ctx context.Context, userID int64, key string) (*model.IdempotentRecord, error) {
	return s.store.Lookup(ctx, userID, key)
}
