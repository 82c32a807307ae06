package handler

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
)

// Idempotency-Key on the purchase; docs/api.md has the contract. The first
// answer to a key is stored for IdempotencyTTL and replayed to every retry. Any
// instance replays it; each user has a key space of their own. The same key on
// another request is 422 IDEMPOTENCY_KEY_REUSED. A retry while the first
// attempt runs is 409 IDEMPOTENCY_KEY_IN_FLIGHT. Answers that say the request
// did not finish are not stored: RATE_LIMITED, UNAVAILABLE, INTERNAL. Then the
// key is given up and a retry runs the request again.

// IdempotencyHeader is the request header naming the key.
const IdempotencyHeader = "Idempotency-Key"

// ReplayedHeader marks an answer replayed from an earlier attempt.
const ReplayedHeader = "Idempotent-Replayed"

// IdempotencyTTL is how long a key's answer is kept.
const IdempotencyTTL = 24 * time.Hour

// maxIdempotencyKey bounds a key's length.
const maxIdempotencyKey = 255

// idempotencyGrace is added to the request timeout for the lease of an
// attempt in flight: past it, a crashed attempt no longer blocks its key.
const idempotencyGrace = 10 * time.Second

// Idempotency stores the Idempotency-Key records (*redisstore.Idempotency).
type Idempotency interface {
	// Begin claims the user's key for a request with fingerprint fp, in flight
	// for lease. It returns the attempt's owner token. A key already claimed
	// returns its record instead.
	Begin(ctx context.Context, userID int64, key, fp string, lease time.Duration) (owner string, prior *model.IdempotentRecord, err error)
	// Finish stores the answer of owner's attempt, kept for ttl.
	Finish(ctx context.Context, userID int64, key, owner string, status int, body []byte, ttl time.Duration) (bool, error)
	// Release gives the key up, so that a retry runs the request again.
	Release(ctx context.Context, userID int64, key, owner string) (bool, error)
}

// idempotencyKey reads the header's key: 1 to 255 visible ASCII characters,
// bare or as a quoted string (the header's structured-field form).
func idempotencyKey(raw string) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if raw == "" || len(raw) > maxIdempotencyKey {
		return "", model.InvalidArgument(IdempotencyHeader, "must be 1 to 255 characters")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] > '~' || raw[i] == '"' {
			return "", model.InvalidArgument(IdempotencyHeader, "must be visible ASCII characters")
		}
	}
	return raw, nil
}

// idempotent is the middleware of a route that honours Idempotency-Key. A
// request without the header passes untouched.
func (a *api) idempotent(c *gin.Context) {
	raw := c.GetHeader(IdempotencyHeader)
	if raw == "" {
		return
	}
	key, err := idempotencyKey(raw)
	if err != nil {
		a.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	u, _ := middleware.UserFrom(ctx)
	fp := c.Request.Method + " " + c.Request.URL.Path
	owner, prior, err := a.Idempotency.Begin(ctx, u.ID, key, fp, a.RequestTimeout+idempotencyGrace)
	switch {
	case err != nil:
		a.fail(c, err) // a key that cannot be checked cannot be kept: 503
		return
	case prior != nil && prior.Fingerprint != fp:
		a.fail(c, model.ErrIdempotencyKeyReused)
		return
	case prior != nil && !prior.Done:
		a.fail(c, model.ErrIdempotencyKeyInFlight)
		return
	case prior != nil:
		c.Header(ReplayedHeader, "true")
		c.Abort()
		c.Data(prior.Status, jsonContentType, prior.Body)
		return
	}
	// The attempt runs to its end even when its client goes away, within
	// the request's deadline, so that a retry gets its answer.
	run := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		run, cancel = context.WithDeadline(run, dl)
		defer cancel()
	}
	c.Request = c.Request.WithContext(run)
	w := &capturingWriter{ResponseWriter: c.Writer}
	c.Writer = w
	c.Next()

	// The request's context may be over (deadline, client gone): the
	// record is written with one of its own.
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	var held bool
	switch w.code {
	case CodeRateLimited, CodeUnavailable, CodeInternal:
		held, err = a.Idempotency.Release(done, u.ID, key, owner)
	default:
		if w.Status() >= http.StatusInternalServerError {
			held, err = a.Idempotency.Release(done, u.ID, key, owner)
		} else {
			held, err = a.Idempotency.Finish(done, u.ID, key, owner, w.Status(), w.body.Bytes(), IdempotencyTTL)
		}
	}
	switch {
	case err != nil:
		a.Log.WarnContext(ctx, "idempotency key not recorded: held until its lease ends", "user_id", u.ID, "err", err)
	case !held:
		a.Log.WarnContext(ctx, "idempotency key lost its lease before the answer", "user_id", u.ID)
	}
}

// capturingWriter keeps a copy of the body it writes, and the code of
// the refusal Fail wrote ("" for a success).
type capturingWriter struct {
	gin.ResponseWriter
	body bytes.Buffer
	code string
}

func (w *capturingWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *capturingWriter) WriteString(s string) (int, error) {
	w.body.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}
