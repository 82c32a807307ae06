package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
	"seckill/observe/live"
)

// The live sale dashboard: GET /admin/vouchers/:id/live streams Server-Sent
// Events. It sends one "snapshot" event a second, and "end" when its lifetime
// is over. Every instance counts its answers in memory (observe) and publishes
// them to Redis. The stream reads Redis and the database, so any instance shows
// the whole sale. The route takes the ordinary authorization header;
// docs/api.md says why.

// LiveRoute is the route of the live dashboard stream.
const LiveRoute = "/admin/vouchers/:id/live"

// Limits of the live streams of one instance.
const (
	// liveInterval is how often a stream sends a snapshot.
	liveInterval = time.Second
	// liveLifetime ends a stream (the client reconnects, authenticating
	// again: a token that expired or lost its role stops there).
	liveLifetime = 10 * time.Minute
	// maxLiveStreams bounds the streams one instance serves at a time;
	// more are refused with 429.
	maxLiveStreams = 32
	// liveWriteTimeout bounds one write of a stream (a client that stops
	// reading is dropped).
	liveWriteTimeout = 10 * time.Second
	// liveRecheck is how often an open stream checks its token again: a
	// revoked or demoted admin's stream ends within it.
	liveRecheck = 2 * time.Second
)

// liveAPI serves the live dashboard's routes.
type liveAPI struct {
	*api
	// streams holds one token per live dashboard stream being served.
	streams chan struct{}
}

// liveRoutes adds the dashboard's routes when a board is configured.
func liveRoutes(a *api, r *gin.Engine, authed, admin gin.HandlerFunc) {
	if a.Board == nil {
		return
	}
	l := &liveAPI{api: a, streams: make(chan struct{}, maxLiveStreams)}
	r.GET(LiveRoute, authed, admin, l.liveStream)
	r.GET("/admin/live", authed, admin, l.liveSales)
	r.GET("/admin/vouchers/:id/history", authed, admin, l.liveHistory)
}

// liveHistory is GET /admin/vouchers/:id/history: the voucher's answers by
// code over its whole sale, summed in steps (live.History), kept after the
// sale: the dashboard draws its curve from it when opened later. A voucher
// without answers (or unknown) has no points.
func (a *liveAPI) liveHistory(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	h, err := a.Board.History(c.Request.Context(), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, h)
}

// liveSales is GET /admin/live: the instances publishing live counters and
// the vouchers they answered for in the last seconds (the sales to watch).
func (a *liveAPI) liveSales(c *gin.Context) {
	sales, err := a.Board.Sales(c.Request.Context())
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, sales)
}

func (a *liveAPI) liveStream(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	select {
	case a.streams <- struct{}{}:
		defer func() { <-a.streams }()
	default:
		a.fail(c, model.ErrRateLimited)
		return
	}
	// The route is exempt from the request deadline (Deadline): the
	// stream ends when the client goes, at liveLifetime, or at shutdown.
	ctx := c.Request.Context()
	view := a.Board.View(id)
	defer view.Close()
	first, err := view.Start(ctx)
	if err != nil {
		a.fail(c, err) // 404 for an unknown voucher, 503, ...
		return
	}

	w := c.Writer
	// The server's WriteTimeout would cut the stream: it sets its own
	// write deadline before each event instead.
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			a.Log.ErrorContext(ctx, "live stream: encode", "err", err)
			return false
		}
		if err := rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("snapshot", first) {
		return
	}
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	end := time.NewTimer(liveLifetime)
	defer end.Stop()
	recheck := time.NewTicker(liveRecheck)
	defer recheck.Stop()
	var shutdown <-chan struct{}
	if a.Streams != nil {
		shutdown = a.Streams.Done()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-recheck.C:
			if a.accessLost(ctx) {
				send("end", map[string]string{"reason": "access revoked"})
				return
			}
		case <-shutdown:
			send("end", map[string]string{"reason": "server shutting down: reconnect"})
			return
		case <-end.C:
			send("end", map[string]string{"reason": "stream lifetime reached: reconnect"})
			return
		case <-tick.C:
			if !send("snapshot", view.Next(ctx)) {
				return
			}
		}
	}
}

// accessLost reports whether the stream's token lost its access since the
// stream opened: revoked, or its user no longer an admin. A check that fails
// for another reason (the database unreachable) keeps the stream: the next
// one decides.
func (a *liveAPI) accessLost(ctx context.Context) bool {
	u, ok := middleware.UserFrom(ctx)
	if !ok {
		return true
	}
	if a.Revocations != nil && a.Revocations.Revoked(u.ID, u.IssuedAt) {
		return true
	}
	if a.AdminCheck == nil {
		return false
	}
	err := a.AdminCheck.CheckAdmin(ctx, u.ID, u.IssuedAt)
	if err != nil && !errors.Is(err, model.ErrForbidden) && !errors.Is(err, model.ErrUnauthorized) {
		a.Log.WarnContext(ctx, "live stream: access not checked", "user_id", u.ID, "err", err)
		return false
	}
	return err != nil
}

// observe counts one seckill answer for the live dashboard. It costs no I/O. It
// records the code ("OK" on success), where a duplicate was stopped, and the
// time since start. Answers that never reached a voucher are not counted. A
// refusal before the voucher was read, or an outage, counts only for a proven
// voucher. live.Recorder.Observe keeps that proof.
func (a *api) observe(voucherID int64, code string, err error, start time.Time) {
	if a.Live == nil || code == CodeInvalidArgument || code == CodeVoucherNotFound || code == CodeUnauthorized {
		return
	}
	dup := live.NotDuplicate
	if code == CodeDuplicateOrder {
		switch {
		case errors.Is(err, model.ErrUniqueKey):
			dup = live.StoppedByUniqueKey
		case errors.Is(err, model.ErrLockRefused):
			dup = live.StoppedByLock
		case errors.Is(err, model.ErrStaleFence):
			dup = live.StoppedByFence
		default:
			dup = live.StoppedByCheck
		}
	}
	a.Live.Observe(voucherID, code, dup, time.Since(start))
}
