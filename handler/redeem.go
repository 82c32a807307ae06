package handler

import (
	"context"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
	"seckill/service/redeem"
)

// Redemption is the redemption at the shop as the routes see it
// (*redeem.Service).
type Redemption interface {
	// Code returns the code of the user's paid order ("" when not paid).
	Code(ctx context.Context, userID, orderID int64) (string, error)
	Redeem(ctx context.Context, c redeem.Caller, shopID int64, code string) (*model.Redeemed, error)
	AddStaff(ctx context.Context, shopID int64, phone string) (*model.User, error)
	RemoveStaff(ctx context.Context, shopID, userID int64) (bool, error)
}

// redeemRoutes are the redemption's routes: the staff's redeem and the
// admin's staff.
func redeemRoutes(a *api, r *gin.Engine, authed, admin gin.HandlerFunc) {
	r.POST("/shop/:shopId/redeem", authed, a.redeem)
	r.POST("/admin/shops/:shopId/staff", authed, admin, a.addStaff)
	r.DELETE("/admin/shops/:shopId/staff/:userId", authed, admin, a.removeStaff)
}

// orderView is an order as its owner reads it: the order's fields, when
// it was used, and while it is paid and unused its redemption code and
// the code drawn as a QR (a PNG data: URL).
type orderView struct {
	orderResponse
	UseTime    *time.Time `json:"useTime,omitempty"`
	RedeemCode string     `json:"redeemCode,omitempty"`
	RedeemQR   string     `json:"redeemQR,omitempty"`
}

// ownerView is o as its owner reads it. A paid order's code is made on its
// first read (Redemption.Code).
func (a *api) ownerView(ctx context.Context, userID int64, o *model.VoucherOrder) (orderView, error) {
	v := orderView{orderResponse: a.orderOut(o), UseTime: o.UseTime}
	if o.Status != model.OrderStatusPaid || o.UserID != userID || a.Redemption == nil {
		return v, nil
	}
	code := ""
	if o.RedeemCode != nil {
		code = *o.RedeemCode
	} else {
		var err error
		if code, err = a.Redemption.Code(ctx, userID, o.ID); err != nil {
			return v, err
		}
	}
	if code != "" {
		v.RedeemCode, v.RedeemQR = code, qrImage(code)
	}
	return v, nil
}

type redeemRequest struct {
	Code string `json:"code"`
}

// redeemResponse tells the counter what was redeemed.
type redeemResponse struct {
	OrderID     string    `json:"orderId"`
	VoucherID   int64     `json:"voucherId"`
	Title       string    `json:"title"`
	ActualValue int64     `json:"actualValue"`
	Status      string    `json:"status"`
	UseTime     time.Time `json:"useTime"`
}

// redeem is POST /shop/:shopId/redeem: the staff of the shop redeem a
// code, once.
func (a *api) redeem(c *gin.Context) {
	shopID, err := pathID(c, "shopId")
	if err != nil {
		a.fail(c, err)
		return
	}
	var req redeemRequest
	if err := decodeJSON(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	if req.Code == "" {
		a.fail(c, model.InvalidArgument("code", "required"))
		return
	}
	u, _ := middleware.UserFrom(c.Request.Context())
	out, err := a.Redemption.Redeem(c.Request.Context(), redeem.Caller{UserID: u.ID, Role: u.Role, IssuedAt: u.IssuedAt}, shopID, req.Code)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, redeemResponse{OrderID: strconv.FormatInt(out.OrderID, 10), VoucherID: out.VoucherID, Title: out.Title,
		ActualValue: out.ActualValue, Status: model.OrderStatusName(model.OrderStatusUsed), UseTime: out.UseTime})
}

type staffRequest struct {
	Phone string `json:"phone"`
}

type staffResponse struct {
	UserID int64  `json:"userId"`
	ShopID int64  `json:"shopId"`
	Role   string `json:"role"`
}

// addStaff is POST /admin/shops/:shopId/staff.
func (a *api) addStaff(c *gin.Context) {
	shopID, err := pathID(c, "shopId")
	if err != nil {
		a.fail(c, err)
		return
	}
	var req staffRequest
	if err := decodeJSON(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	u, err := a.Redemption.AddStaff(c.Request.Context(), shopID, req.Phone)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, staffResponse{UserID: u.ID, ShopID: shopID, Role: u.Role})
}

// removeStaff is DELETE /admin/shops/:shopId/staff/:userId.
func (a *api) removeStaff(c *gin.Context) {
	shopID, err := pathID(c, "shopId")
	if err != nil {
		a.fail(c, err)
		return
	}
	userID, err := pathID(c, "userId")
	if err != nil {
		a.fail(c, err)
		return
	}
	removed, err := a.Redemption.RemoveStaff(c.Request.Context(), shopID, userID)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, gin.H{"removed": removed})
}
