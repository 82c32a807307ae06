package handler

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
	"seckill/service/room"
)

// Room is the waiting room as the routes see it (*room.WaitingRoom).
type Room interface {
	// Join puts the user in the room; addr is the client's address.
	Join(ctx context.Context, userID, voucherID int64, addr string) (*room.View, error)
	// Poll answers the user's place; ticket is the Queue-Ticket header.
	Poll(ctx context.Context, userID, voucherID int64, ticket, addr string) (*room.View, error)
	// Admit checks the purchase's admission token; nil for a voucher
	// without a room.
	Admit(ctx context.Context, userID, voucherID int64, token string) error
	// Outcome tells the room how a purchase ended.
	Outcome(ctx context.Context, userID, voucherID int64, buyErr error, took time.Duration)
	// Audit is the voucher's room for its audit; nil without one.
	Audit(ctx context.Context, voucherID int64) (*model.RoomAudit, error)
}

// AdmissionHeader carries the waiting room's admission token on a purchase.
const AdmissionHeader = "Admission-Token"

// TicketHeader carries the waiting room's place ticket on a poll.
const TicketHeader = "Queue-Ticket"

// roomRoutes adds POST (join) and GET (poll) /voucher-order/seckill/:id/queue.
func roomRoutes(a orderAPI, r *gin.Engine, authed gin.HandlerFunc) {
	r.POST("/voucher-order/seckill/:id/queue", authed, func(c *gin.Context) { a.room(c, false) })
	r.GET("/voucher-order/seckill/:id/queue", authed, func(c *gin.Context) { a.room(c, true) })
}

// room answers a join, or a poll when poll.
func (a orderAPI) room(c *gin.Context, poll bool) {
	voucherID, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	u, _ := middleware.UserFrom(ctx)
	var v *room.View
	if poll {
		v, err = a.Room.Poll(ctx, u.ID, voucherID, c.GetHeader(TicketHeader), c.ClientIP())
	} else {
		v, err = a.Room.Join(ctx, u.ID, voucherID, c.ClientIP())
	}
	if err != nil {
		a.fail(c, err)
		return
	}
	writeRoom(c, v)
}
