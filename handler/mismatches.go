package handler

import (
	"context"
	"strconv"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// Mismatches reads what the reconciliation of the pay providers found
// (*payment.Reconciler).
type Mismatches interface {
	// Mismatches lists the newest limit mismatches, of the voucher's
	// orders when voucherID > 0, and how many there are.
	Mismatches(ctx context.Context, voucherID int64, limit int) ([]model.PayMismatch, int64, error)
}

// mismatchRoutes: GET /admin/payments/mismatches?voucherId=&limit= (admin).
func mismatchRoutes(a *api, r *gin.Engine, authed, admin gin.HandlerFunc) {
	r.GET("/admin/payments/mismatches", authed, admin, a.mismatches)
}

// mismatches answers the newest mismatches (limit, default 50, at most
// 500), of one voucher's orders with voucherId; total counts them all.
func (a *api) mismatches(c *gin.Context) {
	voucherID, limit := int64(0), 50
	if v := c.Query("voucherId"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			a.fail(c, model.InvalidArgument("voucherId", "must be a positive number"))
			return
		}
		voucherID = id
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			a.fail(c, model.InvalidArgument("limit", "must be a number from 1 to 500"))
			return
		}
		limit = n
	}
	list, total, err := a.Mismatches.Mismatches(c.Request.Context(), voucherID, limit)
	if err != nil {
		a.fail(c, err)
		return
	}
	okList(c, list, total)
}
