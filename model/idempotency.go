package model

import "errors"

// The refusals of a request carrying an Idempotency-Key.
var (
	// ErrIdempotencyKeyReused: the key was first used for another request.
	ErrIdempotencyKeyReused = errors.New("idempotency key used for another request")
	// ErrIdempotencyKeyInFlight: the key's first request has no answer
	// yet; retrying later gets it.
	ErrIdempotencyKeyInFlight = errors.New("idempotency key in flight")
)

// IdempotentRecord is what an Idempotency-Key holds: the fingerprint of
// the request that claimed it and, once it was answered, its answer.
type IdempotentRecord struct {
	Fingerprint string
	Done        bool
	Status      int
	Body        []byte
}

// MaxIdempotencyKey is the longest Idempotency-Key, in bytes, on every
// keyed route. A pay's key is recorded with the order, in a column of 64.
const MaxIdempotencyKey = 64

// ParseIdempotencyKey reads an Idempotency-Key header's value. A key is 1 to
// MaxIdempotencyKey visible ASCII characters, bare or as a quoted string
// (the header's structured-field form). The key is returned unquoted, so
// "abc" and abc are one key. This is the one rule of every keyed route.
func ParseIdempotencyKey(raw string) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if raw == "" || len(raw) > MaxIdempotencyKey {
		return "", InvalidArgument("Idempotency-Key", "must be 1 to 64 characters")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] > '~' || raw[i] == '"' {
			return "", InvalidArgument("Idempotency-Key", "must be visible ASCII characters")
		}
	}
	return raw, nil
}
