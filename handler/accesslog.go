package handler

import (
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/service/account"
)

// accessLog logs one info line per request, at most perSecond lines a second.
// The line "request" holds method, route, path, status, code, duration and
// client. Lines over the cap are counted; the next line written says how many
// were dropped. It never logs the authorization header or a body. A phone in
// the query is masked (138****5678).
func accessLog(log *slog.Logger, perSecond int) gin.HandlerFunc {
	// The budget of the current second, without a lock (every request
	// passes here): second is the unix second the count belongs to.
	var second, count, dropped atomic.Int64
	return func(c *gin.Context) {
		// The request takes its place in the budget as it begins, so that
		// a refusal's code is kept (codeKey) only for a line written.
		start := time.Now()
		if s := start.Unix(); second.Load() != s && second.Swap(s) != s {
			count.Store(0)
		}
		if count.Add(1) > int64(perSecond) {
			c.Next()
			dropped.Add(1)
			return
		}
		c.Set(accessLogged, true)
		c.Next()
		now := time.Now()
		attrs := []any{
			"method", c.Request.Method, "route", c.FullPath(), "path", c.Request.URL.Path,
			"query", maskQuery(c.Request.URL.RawQuery), "status", c.Writer.Status(),
			"duration_ms", float64(now.Sub(start).Microseconds()) / 1000, "client", c.ClientIP(),
		}
		if code := c.GetString(codeKey); code != "" {
			attrs = append(attrs, "code", code)
		}
		if skipped := dropped.Swap(0); skipped > 0 {
			attrs = append(attrs, "dropped_before", skipped)
		}
		log.InfoContext(c.Request.Context(), "request", attrs...)
	}
}

// codeKey is where Fail leaves a refusal's code for the access log.
const codeKey = "seckill.code"

// accessLogged marks a request the access log writes a line of.
const accessLogged = "seckill.accessLogged"

// maskQuery masks the phone parameter of a query (138****5678, written
// as is); the other parameters stay, in order of name.
func maskQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsable)"
	}
	phones := q["phone"]
	delete(q, "phone")
	var b strings.Builder
	for _, p := range phones {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString("phone=" + account.MaskPhone(p))
	}
	if rest := q.Encode(); rest != "" {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(rest)
	}
	return b.String()
}
