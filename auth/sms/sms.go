// Package sms delivers login codes to the buyer's phone: through an
// operator's webhook or through Tencent Cloud SMS. Bounded wraps either one
// with its own budget of concurrent sends, a deadline and bounded retries.
// The development log is no sender here: the service logs the code itself.
package sms

import (
	"context"
	"errors"
	"time"
)

// Sender delivers one login code. A nil error means the gateway took it.
type Sender interface {
	SendCode(ctx context.Context, phone, code string, ttl time.Duration) error
}

// Error is a send that failed. Reason says it in words the buyer may read;
// Err keeps the cause for the log.
type Error struct {
	// Reason is shown to the buyer, e.g. "the SMS service did not answer".
	Reason string
	// Temporary is true when another attempt may succeed.
	Temporary bool
	Err       error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "sms: " + e.Reason
	}
	return "sms: " + e.Reason + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// BuyerReason is Reason; the service reads it through an interface.
func (e *Error) BuyerReason() string { return e.Reason }

// Reasons in words.
const (
	reasonTimeout = "the SMS service did not answer in time"
	reasonDown    = "the SMS service could not be reached"
	reasonFailed  = "the SMS service failed"
	reasonRefused = "the SMS service refused the message"
	reasonBusy    = "too many codes are being sent right now"
)

// transportError classifies an error of the HTTP round trip.
func transportError(ctx context.Context, err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return &Error{Reason: reasonTimeout, Temporary: true, Err: err}
	}
	return &Error{Reason: reasonDown, Temporary: true, Err: err}
}

// statusError classifies an HTTP status other than 2xx: 5xx and 429 may
// pass on another attempt, other 4xx will not.
func statusError(status int, err error) *Error {
	if status >= 500 || status == 429 || status == 408 {
		return &Error{Reason: reasonFailed, Temporary: true, Err: err}
	}
	return &Error{Reason: reasonRefused, Err: err}
}
