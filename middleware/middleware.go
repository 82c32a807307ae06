// Package middleware holds the gin middleware of the service: authentication,
// the admin check, request deadlines, metrics and panic recovery. Errors are
// written by the handler layer's function passed in as fail.
package middleware

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/auth"
	"seckill/model"
	"seckill/observe/metrics"
)

// FailFunc writes err as the error response and aborts.
type FailFunc func(c *gin.Context, err error)

type userKey struct{}

// User is the authenticated caller.
type User struct {
	ID   int64
	Role string
	// IssuedAt is the token's iat (zero when it has none).
	IssuedAt time.Time
}

// UserFrom returns the caller put in the context by Auth.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// WithUser returns ctx carrying u (tests use it).
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// MaxAuthorization bounds the authorization header: the service's tokens
// are about 200 bytes, and a longer header is refused before any decoding.
const MaxAuthorization = 4 << 10

// Revocations says, from memory, whether the token of userID issued at
// iat (zero when the token has none) is revoked.
type Revocations interface {
	Revoked(userID int64, iat time.Time) bool
}

// AdminCheck checks an admin token against the user's current role and
// revocation: model.ErrForbidden, model.ErrUnauthorized, or an
// unavailability error.
type AdminCheck interface {
	CheckAdmin(ctx context.Context, userID int64, iat time.Time) error
}

// Auth requires a valid token in the authorization header; "Bearer " is
// optional. The token must not be revoked in revoked (nil checks none). It puts
// the caller in the request context. Authentication costs no Redis or database
// lookup.
func Auth(tokens *auth.Tokens, revoked Revocations, fail FailFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("authorization")
		if len(h) > MaxAuthorization {
			fail(c, model.ErrUnauthorized)
			return
		}
		h = strings.TrimSpace(h)
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			h = strings.TrimSpace(h[7:])
		}
		if h == "" {
			fail(c, model.ErrUnauthorized)
			return
		}
		claims, err := tokens.Parse(h)
		if err != nil {
			fail(c, model.ErrUnauthorized)
			return
		}
		u := User{ID: claims.UserID, Role: claims.Role}
		if claims.IssuedAt != nil {
			u.IssuedAt = claims.IssuedAt.Time
		}
		if revoked != nil && revoked.Revoked(u.ID, u.IssuedAt) {
			fail(c, model.ErrUnauthorized)
			return
		}
		c.Request = c.Request.WithContext(WithUser(c.Request.Context(), u))
		c.Next()
	}
}

// Admin requires the caller's role to be admin, after Auth. It checks the
// token, then check, which reads the database (nil: the token alone).
func Admin(check AdminCheck, fail FailFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, ok := UserFrom(c.Request.Context())
		if !ok {
			fail(c, model.ErrUnauthorized)
			return
		}
		if u.Role != model.RoleAdmin {
			fail(c, model.ErrForbidden)
			return
		}
		if check != nil {
			if err := check.CheckAdmin(c.Request.Context(), u.ID, u.IssuedAt); err != nil {
				fail(c, err)
				return
			}
		}
		c.Next()
	}
}

// BodyLimit bounds every request body to limit bytes before any handler reads
// it. A declared length over the limit is refused at once. A longer body
// without one fails where it is read. No route takes a form, so a multipart
// body never reaches the disk. If one is parsed anyway, its temporary files are
// removed when the request ends.
func BodyLimit(limit int64, log *slog.Logger, fail FailFunc) gin.HandlerFunc {
	tooLarge := model.InvalidArgument("body", "larger than "+byteSize(limit))
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			c.Header("Connection", "close")
			fail(c, tooLarge)
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		defer func() {
			if f := c.Request.MultipartForm; f != nil {
				if err := f.RemoveAll(); err != nil {
					log.WarnContext(c.Request.Context(), "multipart temporary files", "err", err)
				}
			}
		}()
		c.Next()
	}
}

// byteSize spells n bytes in KiB when it is a whole number of them.
func byteSize(n int64) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Deadline bounds every request; d ≤ 0 sets none. Work still waiting on Redis
// or the database fails with UNAVAILABLE when d elapses. The routes named in
// streams answer with a stream and get no deadline. They bound their own reads
// and writes; their names are c.FullPath() patterns.
func Deadline(d time.Duration, streams ...string) gin.HandlerFunc {
	if d <= 0 {
		return func(c *gin.Context) { c.Next() }
	}
	return func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/debug/pprof/") || slices.Contains(streams, c.FullPath()) {
			c.Next() // profiles and streams run for as long as they were asked to
			return
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// Metrics counts requests by route, method and status and times them. Every
// label takes a bounded set of values whatever the client sends. The route is a
// registered pattern or "unmatched", never the path. The method is a standard
// one or "OTHER"; the status is three digits or "other".
func Metrics(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		s := m.HTTP(route, MethodLabel(c.Request.Method), c.Writer.Status())
		s.Requests.Inc()
		s.Latency.Observe(time.Since(start).Seconds())
	}
}

// MethodLabel is the metric label of an HTTP method. It is the method itself
// when RFC 9110 or RFC 5789 names it, "OTHER" otherwise.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// StatusLabel is the metric label of a status code: the code from 100 to
// 599, "other" otherwise.
func StatusLabel(status int) string { return metrics.StatusLabel(status) }

// Recover turns a panic into a 500 INTERNAL envelope, logged once with the
// panic value, never sent to the client.
func Recover(log *slog.Logger, fail FailFunc) gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, v any) {
		log.ErrorContext(c.Request.Context(), "panic", "route", c.FullPath(), "panic", v)
		fail(c, panicError{v})
	})
}

type panicError struct{ v any }

func (p panicError) Error() string { return "panic" }

// Debug logs each request at debug level (off at the default info level).
func Debug(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		if log.Enabled(c.Request.Context(), slog.LevelDebug) {
			log.DebugContext(c.Request.Context(), "request", "method", c.Request.Method, "path", c.Request.URL.Path,
				"status", c.Writer.Status(), "duration", time.Since(start))
		}
	}
}
