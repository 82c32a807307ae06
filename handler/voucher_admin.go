package handler

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// VoucherAdmin reads, edits and closes one voucher (*catalog.VoucherAdmin).
type VoucherAdmin interface {
	Get(ctx context.Context, voucherID int64) (*model.SeckillVoucherInfo, error)
	Edit(ctx context.Context, voucherID int64, e model.VoucherEdit) error
	Close(ctx context.Context, voucherID int64) error
}

// getVoucher is GET /voucher/seckill/:id: one voucher as the list shows it.
func (a voucherAPI) getVoucher(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	v, err := a.VoucherAdmin.Get(c.Request.Context(), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, newVoucherResponse(v))
}

// editRequest is the body of PUT /voucher/seckill/:id: every field of the
// voucher an admin may change, all required (the voucher's shop and type
// stay).
type editRequest struct {
	Title       *string `json:"title"`
	SubTitle    *string `json:"subTitle"`
	Rules       *string `json:"rules"`
	PayValue    *int64  `json:"payValue"`
	ActualValue *int64  `json:"actualValue"`
	Stock       *int    `json:"stock"`
	BeginTime   *string `json:"beginTime"`
	EndTime     *string `json:"endTime"`
	// WaitingRoom is optional: absent keeps the voucher's.
	WaitingRoom *bool `json:"waitingRoom"`
}

func (r *editRequest) edit(loc *time.Location) (model.VoucherEdit, error) {
	required := []struct {
		name    string
		missing bool
	}{
		{"title", r.Title == nil}, {"subTitle", r.SubTitle == nil}, {"rules", r.Rules == nil},
		{"payValue", r.PayValue == nil}, {"actualValue", r.ActualValue == nil}, {"stock", r.Stock == nil},
		{"beginTime", r.BeginTime == nil}, {"endTime", r.EndTime == nil},
	}
	for _, f := range required {
		if f.missing {
			return model.VoucherEdit{}, model.InvalidArgument(f.name, "required")
		}
	}
	begin, err := parseTime(*r.BeginTime, loc)
	if err != nil {
		return model.VoucherEdit{}, model.InvalidArgument("beginTime", err.Error())
	}
	end, err := parseTime(*r.EndTime, loc)
	if err != nil {
		return model.VoucherEdit{}, model.InvalidArgument("endTime", err.Error())
	}
	return model.VoucherEdit{
		Title: *r.Title, SubTitle: *r.SubTitle, Rules: *r.Rules, PayValue: *r.PayValue,
		ActualValue: *r.ActualValue, Stock: *r.Stock, BeginTime: begin, EndTime: end,
		WaitingRoom: r.WaitingRoom,
	}, nil
}

// editVoucher is PUT /voucher/seckill/:id (admin): allowed while the sale
// has not started; VOUCHER_NOT_EDITABLE after.
func (a voucherAPI) editVoucher(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	var req editRequest
	if err := decodeJSON(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	e, err := req.edit(a.Location)
	if err != nil {
		a.fail(c, err)
		return
	}
	if err := a.VoucherAdmin.Edit(c.Request.Context(), id, e); err != nil {
		a.fail(c, err)
		return
	}
	a.getVoucher(c)
}

// closeVoucher is POST /voucher/seckill/:id/close (admin): the sale ends
// now and the voucher is marked closed; its orders stay.
func (a voucherAPI) closeVoucher(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	if err := a.VoucherAdmin.Close(c.Request.Context(), id); err != nil {
		a.fail(c, err)
		return
	}
	a.getVoucher(c)
}
