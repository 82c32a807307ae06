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
