package handler

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
)

// Idempotency-Key on the purchase, the pay and the cancel; docs/api.md has
// the contract. A success is stored for IdempotencyTTL and replayed to
// every retry. Any instance replays it; each user has a key space of their
// own, of at most SECKILL_IDEMPOTENCY_MAX_KEYS live keys. The same key on
// another request is 422 IDEMPOTENCY_KEY_REUSED. A retry while the first
// attempt runs is 409 IDEMPOTENCY_KEY_IN_FLIGHT. A refusal is not stored:
// it changed nothing, or it tells the client to retry (ORDER_PENDING,
// RATE_LIMITED, UNAVAILABLE, INTERNAL). Then the key is given up and a
// retry runs the request again.

// IdempotencyHeader is the request header naming the key.
const IdempotencyHeader = "Idempotency-Key"

// ReplayedHeader marks an answer replayed from an earlier attempt.
const ReplayedHeader = "Idempotent-Replayed"

// DefaultIdempotencyTTL is how long a key's answer is kept when
// Deps.IdempotencyTTL is unset (SECKILL_IDEMPOTENCY_TTL).
const DefaultIdempotencyTTL = 24 * time.Hour

// maxStoredAnswer bounds the body of a stored answer. Every answer of a
// keyed route is far smaller; a larger one is not stored.
const maxStoredAnswer = 1 << 10

// idempotencyGrace is added to the request timeout for the lease of an
// attempt in flight: past it, a crashed attempt no longer blocks its key.
const idempotencyGrace = 10 * time.Second

// keyContext is the gin context key of the request's parsed
// Idempotency-Key.
const keyContext = "seckill.idempotencyKey"

// Idempotency stores the Idempotency-Key records (*redisstore.Idempotency).
type Idempotency interface {
	// Begin claims the user's key for a request with fingerprint fp, in flight
	// for lease. It returns the attempt's owner token. A key already claimed
	// returns its record instead. A user at the cap of live keys gets a
	// *model.RateLimitedError.
	Begin(ctx context.Context, userID int64, key, fp string, lease time.Duration) (owner string, prior *model.IdempotentRecord, err error)
	// Finish stores the answer of owner's attempt, kept for ttl.
	Finish(ctx context.Context, userID int64, key, owner string, status int, body []byte, ttl time.Duration) (bool, error)
	// Release gives the key up, so that a retry runs the request again.
	Release(ctx context.Context, userID int64, key, owner string) (bool, error)
	// Lookup reads the user's key's record without claiming the key: nil
	// when it holds none.
	Lookup(ctx context.Context, userID int64, key string) (*model.IdempotentRecord, error)
}

// requestKey is the request's Idempotency-Key, unquoted ("" when none):
// the one the middleware parsed, or the header's.
func requestKey(c *gin.Context) (string, error) {
	if k, ok := c.Get(keyContext); ok {
		return k.(string), nil
	}
	raw := c.GetHeader(IdempotencyHeader)
	if raw == "" {
		return "", nil
	}
	return model.ParseIdempotencyKey(raw)
}

// fingerprint names the request a key was first used for: its method,
// route and ids as parsed, so /seckill/06 and /seckill/6 are one request.
func fingerprint(c *gin.Context) string {
	var b strings.Builder
	b.WriteString(c.Request.Method + " " + c.FullPath())
	for _, p := range c.Params {
		v := p.Value
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			v = strconv.FormatInt(n, 10)
		}
		b.WriteString(" " + p.Key + "=" + v)
	}
	return b.String()
}

// kept tells whether the answer of a keyed attempt is stored: a success
// only, within maxStoredAnswer. A refusal changed nothing, or asks for a
// retry; either way a retry with the key runs the request again.
func kept(w *capturingWriter) bool {
	return w.code == "" && w.Status() >= 200 && w.Status() < 300 && w.body.Len() <= maxStoredAnswer
}

// idempotent is the middleware of a route that honours Idempotency-Key
// (pay and cancel). A request without the header passes untouched.
func (a *api) idempotent(c *gin.Context) {
	if c.GetHeader(IdempotencyHeader) == "" {
		return
	}
	a.keyed(c, (*gin.Context).Next)
}

// keyed runs the request's rest, next, under its Idempotency-Key: a first
// attempt runs next and keeps its success; a retry gets the kept answer,
// or a refusal (in flight, reused) without running next.
func (a *api) keyed(c *gin.Context, next func(*gin.Context)) {
	raw := c.GetHeader(IdempotencyHeader)
	key, err := model.ParseIdempotencyKey(raw)
	if err != nil {
		a.fail(c, err)
		return
	}
	c.Set(keyContext, key)
	ctx := c.Request.Context()
	u, _ := middleware.UserFrom(ctx)
	fp := fingerprint(c)
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
	next(c)

	// The request's context may be over (deadline, client gone): the
	// record is written with one of its own.
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	var held bool
	if kept(w) {
		ttl := a.IdempotencyTTL
		if ttl <= 0 {
			ttl = DefaultIdempotencyTTL
		}
		held, err = a.Idempotency.Finish(done, u.ID, key, owner, w.Status(), w.body.Bytes(), ttl)
	} else {
		held, err = a.Idempotency.Release(done, u.ID, key, owner)
	}
	switch {
	case err != nil:
		a.Log.WarnContext(ctx, "idempotency key not recorded: held until its lease ends", "user_id", u.ID, "err", err)
	case !held:
		a.Log.WarnContext(ctx, "idempotency key lost its lease before the answer", "user_id", u.ID)
	}
}

// replayOnly answers a request that may not run (a purchase whose
// admission lapsed) from its key's stored answer, and reports whether it
// did: a request without a key, or whose key holds no answer of this same
// request, is left to its refusal.
func (a *api) replayOnly(c *gin.Context) bool {
	raw := c.GetHeader(IdempotencyHeader)
	if raw == "" || a.Idempotency == nil {
		return false
	}
	key, err := model.ParseIdempotencyKey(raw)
	if err != nil {
		return false
	}
	ctx := c.Request.Context()
	u, _ := middleware.UserFrom(ctx)
	rec, err := a.Idempotency.Lookup(ctx, u.ID, key)
	if err != nil || rec == nil || !rec.Done || rec.Fingerprint != fingerprint(c) {
		return false
	}
	c.Header(ReplayedHeader, "true")
	c.Abort()
	c.Data(rec.Status, jsonContentType, rec.Body)
	return true
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
