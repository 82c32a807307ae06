package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// Idempotency stores the Idempotency-Key records of every instance in
// Redis, one key per record (IdempotencyKey), so a Redis Cluster serves it
// like one Redis. A user's records and their index share one slot; the
// index holds a user to MaxKeys live keys.
type Idempotency struct {
	rdb     redis.UniversalClient
	maxKeys int
}

// DefaultIdempotencyMaxKeys is the cap of live keys per user when none is
// set (SECKILL_IDEMPOTENCY_MAX_KEYS).
const DefaultIdempotencyMaxKeys = 100

// NewIdempotency returns the records on rdb, at most maxKeys live keys per
// user (DefaultIdempotencyMaxKeys when maxKeys <= 0).
func NewIdempotency(rdb redis.UniversalClient, maxKeys int) *Idempotency {
	if maxKeys <= 0 {
		maxKeys = DefaultIdempotencyMaxKeys
	}
	return &Idempotency{rdb: rdb, maxKeys: maxKeys}
}

// Begin claims the user's key for a request with fingerprint fp, in flight
// for lease: it returns the attempt's owner token. A key already claimed
// returns its record instead (owner empty). A new key of a user who holds
// MaxKeys live keys is a *model.RateLimitedError naming the wait until
// the first of them expires.
func (s *Idempotency) Begin(ctx context.Context, userID int64, key, fp string, lease time.Duration) (string, *model.IdempotentRecord, error) {
	owner := rand.Text()
	res, err := scripts.IdempotencyBegin.Run(ctx, s.rdb, idempotencyKeys(userID, key), owner, fp, lease.Milliseconds(),
		IdempotencyKeyHash(key), s.maxKeys).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return owner, nil, nil
	case err != nil:
		return "", nil, model.Unavailable(err)
	}
	if wait, ok := res.(int64); ok {
		return "", nil, model.RateLimited("too many idempotency keys in use by this user", time.Duration(wait)*time.Millisecond)
	}
	rec, err := idempotentRecord(res)
	return "", rec, err
}

// Lookup reads the record of the user's key without claiming it: nil when
// the key holds none.
func (s *Idempotency) Lookup(ctx context.Context, userID int64, key string) (*model.IdempotentRecord, error) {
	v, err := s.rdb.HMGet(ctx, idempotencyKeys(userID, key)[0], "fp", "status", "body").Result()
	if err != nil {
		return nil, model.Unavailable(err)
	}
	if fp, _ := v[0].(string); fp == "" {
		return nil, nil
	}
	return idempotentRecord(v)
}

// idempotentRecord reads a record's {fp, status, body}: status and body
// nil while its first attempt is in flight.
func idempotentRecord(res any) (*model.IdempotentRecord, error) {
	v, _ := res.([]any)
	if len(v) != 3 {
		return nil, fmt.Errorf("idempotency record: %T %v, want 3 fields", res, res)
	}
	rec := &model.IdempotentRecord{}
	rec.Fingerprint, _ = v[0].(string)
	if st, ok := v[1].(string); ok {
		n, err := strconv.Atoi(st)
		if err != nil {
			return nil, fmt.Errorf("idempotency record: status %q: %w", st, err)
		}
		body, _ := v[2].(string)
		rec.Done, rec.Status, rec.Body = true, n, []byte(body)
	}
	return rec, nil
}

// Finish stores the answer of the attempt of owner, kept for ttl. false
// when the attempt no longer holds the key (its lease ran out).
func (s *Idempotency) Finish(ctx context.Context, userID int64, key, owner string, status int, body []byte, ttl time.Duration) (bool, error) {
	return s.finish(ctx, userID, key, owner, strconv.Itoa(status), body, ttl)
}

// Release gives the key up, so that a retry runs the request again. false
// when the attempt of owner no longer holds it.
func (s *Idempotency) Release(ctx context.Context, userID int64, key, owner string) (bool, error) {
	return s.finish(ctx, userID, key, owner, "", nil, 0)
}

func (s *Idempotency) finish(ctx context.Context, userID int64, key, owner, status string, body []byte, ttl time.Duration) (bool, error) {
	n, err := scripts.IdempotencyFinish.Run(ctx, s.rdb, idempotencyKeys(userID, key), owner, status, body, ttl.Milliseconds(),
		IdempotencyKeyHash(key)).Int()
	if err != nil {
		return false, model.Unavailable(err)
	}
	return n == 1, nil
}
