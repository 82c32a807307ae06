package sqlstore

import (
	"context"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Reconciliation is what the reconciliation of the pay providers reads
// of the trades and the mismatches it records (tb_pay_mismatch).
type Reconciliation struct{ db *gorm.DB }

// NewReconciliation returns the reconciliation's store over db.
func NewReconciliation(db *DB) *Reconciliation { return &Reconciliation{db: db.Gorm} }

// Trade reads one trade; a missing one is model.ErrOrderNotFound.
func (s *Reconciliation) Trade(ctx context.Context, outTradeNo string) (*model.PayTrade, error) {
	return takeOne[model.PayTrade](ctx, s.db, "out_trade_no", outTradeNo, model.ErrOrderNotFound)
}

// OpenBefore returns up to limit open trades at provider created before
// before, oldest first.
func (s *Reconciliation) OpenBefore(ctx context.Context, provider string, before time.Time, limit int) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("provider = ? AND state = ? AND create_time < ?", provider, model.TradeRowOpen, before).
		Order("create_time").Limit(limit).Find(&out).Error
	return out, translate(err)
}

// RefundsInFlight returns up to limit trades at provider whose refund is
// owed or processing, each with when the refund became owed: the later of
// the payment and the order's last change (a buyer's request).
func (s *Reconciliation) RefundsInFlight(ctx context.Context, provider string, limit int) ([]model.RefundInFlight, error) {
	var rows []struct {
		model.PayTrade
		UpdateTime *time.Time `gorm:"column:update_time"`
	}
	err := s.db.WithContext(ctx).Table("tb_pay_trade t").Select("t.*, o.update_time").
		Joins("LEFT JOIN tb_voucher_order o ON o.id = t.order_id").
		Where("t.provider = ? AND t.refund_state IN ?", provider, []int{model.RefundRowDue, model.RefundRowProcessing}).
		Order("t.out_trade_no").Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	out := make([]model.RefundInFlight, len(rows))
	for i, r := range rows {
		out[i].Trade = r.PayTrade
		if r.PayTime != nil {
			out[i].Since = *r.PayTime
		}
		if r.UpdateTime != nil && r.UpdateTime.After(out[i].Since) {
			out[i].Since = *r.UpdateTime
		}
	}
	return out, nil
}

// PaidBetween returns the trades at provider paid in [from, to).
func (s *Reconciliation) PaidBetween(ctx context.Context, provider string, from, to time.Time) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("provider = ? AND pay_time >= ? AND pay_time < ? AND state = ?",
		provider, from, to, model.TradeRowPaid).Order("pay_time").Find(&out).Error
	return out, translate(err)
}

// RefundedBetween returns the trades at provider whose refund was done in
// [from, to).
func (s *Reconciliation) RefundedBetween(ctx context.Context, provider string, from, to time.Time) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("provider = ? AND refund_state = ? AND refund_time >= ? AND refund_time < ?",
		provider, model.RefundRowDone, from, to).Order("refund_time").Find(&out).Error
	return out, translate(err)
}

// Record writes the mismatch once per provider, kind, out_trade_no and
// bill date; its voucher is read from its order. It reports whether this
// call wrote it (false: recorded before, by this or another instance).
func (s *Reconciliation) Record(ctx context.Context, m model.PayMismatch) (bool, error) {
	verb := "INSERT IGNORE"
	if s.db.Dialector.Name() == "sqlite" {
		verb = "INSERT OR IGNORE"
	}
	res := s.db.WithContext(ctx).Exec(verb+` INTO tb_pay_mismatch
(provider, kind, out_trade_no, out_refund_no, order_id, voucher_id, amount, detail, action, bill_date, first_seen)
VALUES (?, ?, ?, ?, ?, (SELECT voucher_id FROM tb_voucher_order WHERE id = ?), ?, ?, ?, ?, ?)`,
		m.Provider, m.Kind, m.OutTradeNo, m.OutRefundNo, m.OrderID, m.OrderID, int64(m.Amount),
		clip(m.Detail, 512), clip(m.Action, 512), m.BillDate, m.FirstSeen)
	if res.Error != nil {
		return false, translate(res.Error)
	}
	return res.RowsAffected > 0, nil
}

// Mismatches returns the newest limit mismatches, of the voucher's orders
// when voucherID > 0, and how many there are in all.
func (s *Reconciliation) Mismatches(ctx context.Context, voucherID int64, limit int) ([]model.PayMismatch, int64, error) {
	q := s.db.WithContext(ctx).Model(&model.PayMismatch{})
	if voucherID > 0 {
		q = q.Where("voucher_id = ?", voucherID)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, translate(err)
	}
	out := []model.PayMismatch{}
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, 0, translate(err)
	}
	return out, total, nil
}

// clip cuts s to n bytes on a character's boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}
