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
// the contract. A success is stored for SECKILL_IDEMPOTENCY_TTL (sale.Idempotency) and replayed to
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

// keyContext is the gin context key of the request's parsed
// Idempotency-Key.
const keyContext = "seckill.idempotencyKey"

// Idempotency keeps the answers of keyed requests (*sale.Idempotency).
type Idempotency interface {
	// Begin claims the user's key for the request fp, or returns its record.
	Begin(ctx context.Context, userID int64, key, fp string) (owner string, prior *model.IdempotentRecord, err error)
	// End keeps owner's answer when ok (a success), or gives the key up.
	End(ctx context.Context, userID int64, key, owner string, ok bool, status int, body []byte) (bool, error)
	// Lookup reads the key's record without claiming it; nil for none.
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
	owner, prior, err := a.Idempotency.Begin(ctx, u.ID, key, fp)
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
	// A refusal is never kept: it changed nothing, or asks for a retry.
	held, err := a.Idempotency.End(done, u.ID, key, owner, w.code == "", w.Status(), w.body.Bytes())
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
