package model

import (
	"errors"
	"fmt"
	"time"
)

// Domain errors. Every layer returns these (wrapped with %w) and the handler
// maps them to HTTP status and code in one place. A chain reads from the
// general to the particular: "kind: subject: step: cause", as in
// fmt.Errorf("%w: order %d: %w", ErrUnavailable, id, err); an earlier
// cause goes in parentheses, "(after %w)" or "(%w)".
var (
	ErrVoucherNotFound   = errors.New("voucher not found")
	ErrOrderNotFound     = errors.New("order not found")
	ErrUserNotFound      = errors.New("user not found")
	ErrSeckillNotStarted = errors.New("seckill not started")
	ErrSeckillEnded      = errors.New("seckill ended")
	ErrSoldOut           = errors.New("sold out")
	ErrDuplicateOrder    = errors.New("duplicate order")
	// ErrVoucherNotEditable means the voucher's sale has started or it is
	// closed: it can only be closed now, never edited.
	ErrVoucherNotEditable = errors.New("voucher not editable")
	// ErrOrderCancelled refuses to pay an order its buyer cancelled.
	ErrOrderCancelled = errors.New("order cancelled")
	// ErrOrderExpired refuses to pay an order past its pay deadline.
	ErrOrderExpired = errors.New("order expired")
	// ErrOrderPaid refuses to cancel a paid order.
	ErrOrderPaid = errors.New("order paid")
	// ErrOrderPending refuses to pay or cancel an async order not yet
	// written to the database; retrying shortly succeeds.
	ErrOrderPending = errors.New("order pending")
	// ErrStaleFence means a lock holder presented an outdated fencing token. A
	// newer token was used for the same lock: its lease expired and another
	// holder wrote. It is a duplicate order attempt.
	ErrStaleFence   = errors.New("stale fencing token")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrRateLimited  = errors.New("rate limited")
	// ErrUnavailable means Redis or the database could not be reached in time.
	ErrUnavailable = errors.New("dependency unavailable")
	// ErrReplyLost means a Redis script was sent and its reply lost: it may
	// or may not have run. The caller settles it. It never reaches a client.
	ErrReplyLost = errors.New("script reply lost")
	// ErrForeignState means Redis holds, under a voucher's id, a state that
	// describes another sale: a left-over of a database reset while Redis
	// kept its data. The service rebuilds from the facts. It never reaches a
	// client.
	ErrForeignState = errors.New("redis holds another sale's state under this voucher id")
)

// InvalidArgumentError is a bad input naming the field at fault.
type InvalidArgumentError struct {
	Field  string
	Reason string
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// InvalidArgument returns an *InvalidArgumentError for field.
func InvalidArgument(field, reason string) error {
	return &InvalidArgumentError{Field: field, Reason: reason}
}

// RateLimitedError is a refusal by a limit that lifts after RetryAfter. It
// is ErrRateLimited (errors.Is); the handler sends RetryAfter as the
// Retry-After header.
type RateLimitedError struct {
	Reason     string // what was limited, e.g. "too many codes for this phone"
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%s: try again in %ds", e.Reason, RetryAfterSeconds(e.RetryAfter))
}

// Is makes a *RateLimitedError match ErrRateLimited.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// RateLimited returns a *RateLimitedError.
func RateLimited(reason string, retryAfter time.Duration) error {
	return &RateLimitedError{Reason: reason, RetryAfter: retryAfter}
}

// RetryAfterSeconds is d in whole seconds rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// OverloadedError is a request the server shed before any work, its queue
// full. It is ErrUnavailable (errors.Is); the handler sends RetryAfter as
// the Retry-After header.
type OverloadedError struct{ RetryAfter time.Duration }

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("overloaded: try again in %ds", RetryAfterSeconds(e.RetryAfter))
}

// Is makes an *OverloadedError match ErrUnavailable.
func (e *OverloadedError) Is(target error) bool { return target == ErrUnavailable }

// Overloaded returns an *OverloadedError.
func Overloaded(retryAfter time.Duration) error { return &OverloadedError{RetryAfter: retryAfter} }

// Unavailable wraps err as ErrUnavailable, keeping err for the log.
func Unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// ErrUniqueKey marks a duplicate order that only the database's unique key
// (user_id, voucher_id) stopped: the per-user lock did not do its job. It is
// always returned together with ErrDuplicateOrder.
var ErrUniqueKey = errors.New("unique key violation")

// ErrLockRefused marks a duplicate order that the per-user lock stopped.
// Another request of the same user held the lock.
// It always comes with ErrDuplicateOrder.
// So the live dashboard can tell which check stopped each duplicate.
var ErrLockRefused = errors.New("per-user lock held")

// CodeNotSentError is a login code its sender could not deliver; no code
// was stored. It is ErrUnavailable (errors.Is); its text is for the buyer.
type CodeNotSentError struct {
	To     string // the masked phone, 138****5678
	Reason string // what failed, in words
	// Wait is how long until the phone may ask again (its cooldown).
	Wait time.Duration
}

func (e *CodeNotSentError) Error() string {
	return fmt.Sprintf("the login code could not be sent to %s: %s; no code was stored, ask for a new one in %ds",
		e.To, e.Reason, RetryAfterSeconds(e.Wait))
}

// Is makes a *CodeNotSentError match ErrUnavailable.
func (e *CodeNotSentError) Is(target error) bool { return target == ErrUnavailable }
