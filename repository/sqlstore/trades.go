package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/model"
)

// Trades keeps the trades opened at the pay providers (tb_pay_trade) and
// applies what the providers report to the orders. Each change of a
// trade's state and of its order's state is one transaction.
type Trades struct{ db *gorm.DB }

// NewTrades returns the trades' store over db.
func NewTrades(db *DB) *Trades { return &Trades{db: db.Gorm} }

// tradeOrder is what opening a trade reads of its order.
type tradeOrder struct {
	UserID       int64
	VoucherID    int64
	Status       int
	CancelReason string
	RefundReason string
	CreateTime   time.Time
}

// Open returns the order's open trade at provider, or opens a new one
// (created false: the existing one). The order must be the user's, unpaid
// and inside its pay window (created after cutoff); the trade expires at
// create_time + payTimeout. Its out_trade_no is "<order id>_<attempt>".
// The order's row is locked while the trade is written, so an expiry of
// the order and the trade's opening are ordered: the sweeper never
// cancels an order whose trade is open.
func (s *Trades) Open(ctx context.Context, userID, orderID int64, provider string, now, cutoff time.Time, payTimeout time.Duration) (t *model.PayTrade, subject string, created bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		t, subject, created = nil, "", false
		var o tradeOrder
		// The order's row alone is locked: a JOIN read FOR UPDATE would
		// lock the voucher's row too, and every trade of a hot voucher
		// would open one after the other (and wait for an admin's edit).
		q := tx.Raw(`SELECT user_id, voucher_id, status, cancel_reason, refund_reason, create_time
FROM tb_voucher_order WHERE id = ?`+forUpdate(tx), orderID)
		if res := q.Scan(&o); res.Error != nil {
			return res.Error
		} else if res.RowsAffected == 0 || o.UserID != userID {
			return model.ErrOrderNotFound
		}
		switch {
		case o.Status == model.OrderStatusPaid || o.Status == model.OrderStatusUsed:
			return model.ErrOrderPaid
		case o.Status == model.OrderStatusRefunding || (o.Status == model.OrderStatusRefunded && o.RefundReason == model.RefundByBuyer):
			return fmt.Errorf("%w: refunded at its buyer's request", model.ErrOrderPaid)
		case o.Status == model.OrderStatusCancelled || o.Status == model.OrderStatusRefunded:
			return cancelledErr(&model.VoucherOrder{CancelReason: o.CancelReason})
		case o.Status != model.OrderStatusCreated:
			return fmt.Errorf("order %d: unexpected status %d", orderID, o.Status)
		case expiredAt(&model.VoucherOrder{CreateTime: o.CreateTime}, cutoff):
			return model.ErrOrderExpired
		}
		var v struct {
			PayValue int64
			Title    string
		}
		if res := tx.Raw("SELECT pay_value, title FROM tb_voucher WHERE id = ?", o.VoucherID).Scan(&v); res.Error != nil {
			return res.Error
		} else if res.RowsAffected == 0 {
			return fmt.Errorf("order %d: voucher %d not found", orderID, o.VoucherID)
		}
		subject = v.Title
		var open []model.PayTrade
		if err := tx.Where("open_for = ?", openFor(orderID, provider)).Find(&open).Error; err != nil {
			return err
		}
		if len(open) > 0 {
			t = &open[0]
			return nil
		}
		var n int64
		if err := tx.Model(&model.PayTrade{}).Where("order_id = ?", orderID).Count(&n).Error; err != nil {
			return err
		}
		key := openFor(orderID, provider)
		t = &model.PayTrade{
			OutTradeNo: fmt.Sprintf("%d_%d", orderID, n+1), OrderID: orderID, Provider: provider,
			Amount: model.Fen(v.PayValue), State: model.TradeRowOpen, CreateTime: now,
			ExpireTime: o.CreateTime.Add(payTimeout),
		}
		if err := tx.Exec(`INSERT INTO tb_pay_trade (out_trade_no, order_id, provider, amount, state, open_for, create_time, expire_time)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, t.OutTradeNo, t.OrderID, t.Provider, t.Amount, t.State, key, t.CreateTime, t.ExpireTime).Error; err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		if isModelErr(err) {
			return nil, "", false, err
		}
		return nil, "", false, translate(err)
	}
	return t, subject, created, nil
}

// isModelErr reports the refusals Open answers as they are.
func isModelErr(err error) bool {
	for _, e := range []error{model.ErrOrderNotFound, model.ErrOrderPaid, model.ErrOrderCancelled, model.ErrOrderExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func openFor(orderID int64, provider string) string { return fmt.Sprintf("%d:%s", orderID, provider) }

// forUpdate locks the rows a read takes (nothing on SQLite: one writer).
func forUpdate(tx *gorm.DB) string {
	if tx.Dialector.Name() == "sqlite" {
		return ""
	}
	return " FOR UPDATE"
}

// SetCheckout records what the trade's buyer needs to pay it.
func (s *Trades) SetCheckout(ctx context.Context, outTradeNo string, c model.Checkout) error {
	err := s.db.WithContext(ctx).Exec("UPDATE tb_pay_trade SET qr_code = ?, pay_url = ? WHERE out_trade_no = ?",
		c.QRCode, c.PayURL, outTradeNo).Error
	return translate(err)
}

// Get reads one trade; a missing one is model.ErrOrderNotFound.
func (s *Trades) Get(ctx context.Context, outTradeNo string) (*model.PayTrade, error) {
	return takeOne[model.PayTrade](ctx, s.db, "out_trade_no", outTradeNo, model.ErrOrderNotFound)
}

// OpenOf returns the open trades of the user's order (none for another
// user's order).
func (s *Trades) OpenOf(ctx context.Context, userID, orderID int64) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("order_id = ? AND state = ? AND EXISTS (SELECT 1 FROM tb_voucher_order o WHERE o.id = ? AND o.user_id = ?)",
		orderID, model.TradeRowOpen, orderID, userID).Find(&out).Error
	return out, translate(err)
}

// Due returns up to limit open trades whose pay deadline is not after now.
func (s *Trades) Due(ctx context.Context, now time.Time, limit int) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("state = ? AND expire_time <= ?", model.TradeRowOpen, now).
		Order("expire_time").Limit(limit).Find(&out).Error
	return out, translate(err)
}

// Close ends an open trade as state (model.TradeRowClosed, or
// TradeRowUnknown when the provider could not tell). It reports whether
// the trade was open.
func (s *Trades) Close(ctx context.Context, outTradeNo string, state int) (bool, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE tb_pay_trade SET state = ?, open_for = NULL WHERE out_trade_no = ? AND state = ?",
		state, outTradeNo, model.TradeRowOpen)
	if res.Error != nil {
		return false, translate(res.Error)
	}
	return res.RowsAffected > 0, nil
}

// Paid applies a trade the provider reports paid, once: the trade becomes
// paid and, if its order is unpaid, the order too (pay_type of the
// provider, pay_time, the amount). An order that cannot take the payment
// (cancelled, expired, paid by another trade) owes a refund, recorded on
// the trade with its reason. The amount must be the trade's: another is
// rejected (model.ErrNoticeRejected, reason amount) with nothing changed.
func (s *Trades) Paid(ctx context.Context, outTradeNo, provider, providerTradeNo string, amount model.Fen, paidAt, now time.Time) (*model.PayTrade, model.PaidOutcome, error) {
	var t model.PayTrade
	var out model.PaidOutcome
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Where("out_trade_no = ?", outTradeNo)
		if tx.Dialector.Name() != "sqlite" {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		if res := q.Limit(1).Find(&t); res.Error != nil {
			return res.Error
		} else if res.RowsAffected == 0 {
			return model.RejectNotice("unknown_trade", "no trade %q", outTradeNo)
		}
		switch {
		case t.Provider != provider:
			return model.RejectNotice("unknown_trade", "trade %q is not at %s", outTradeNo, provider)
		case t.Amount != amount:
			return model.RejectNotice("amount", "trade %q: amount %d fen, notified %d", outTradeNo, t.Amount, amount)
		case t.State == model.TradeRowPaid:
			out = model.PaidRepeated
			return nil
		}
		unknown := t.State == model.TradeRowUnknown
		res := tx.Exec(`UPDATE tb_pay_trade SET state = ?, open_for = NULL, provider_trade_no = ?, pay_time = ? WHERE out_trade_no = ?`,
			model.TradeRowPaid, providerTradeNo, paidAt, outTradeNo)
		if res.Error != nil {
			return res.Error
		}
		res = tx.Exec(`UPDATE tb_voucher_order SET status = ?, pay_type = ?, pay_time = ?, pay_amount = ?, update_time = ?
WHERE id = ? AND status = ?`, model.OrderStatusPaid, model.PayTypeOf(provider), paidAt, int64(amount), now,
			t.OrderID, model.OrderStatusCreated)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			out = model.PaidNow
			return nil
		}
		var o model.VoucherOrder
		if err := tx.Where("id = ?", t.OrderID).Take(&o).Error; err != nil {
			return err
		}
		reason := model.RefundLatePayment
		switch {
		case o.Status == model.OrderStatusPaid || o.Status == model.OrderStatusUsed || o.Status == model.OrderStatusRefunding ||
			(o.Status == model.OrderStatusRefunded && o.RefundReason == model.RefundByBuyer):
			// Paid by another trade (refunded since or not): this money
			// is a second payment.
			reason = model.RefundDuplicatePaid
		case unknown:
			reason = model.RefundUnreachable
		}
		out = model.PaidRefund
		return tx.Exec(`UPDATE tb_pay_trade SET refund_state = ?, refund_reason = ?, refund_no = ?, refund_next = ? WHERE out_trade_no = ?`,
			model.RefundRowDue, reason, outTradeNo+"_r", now, outTradeNo).Error
	})
	if errors.Is(err, model.ErrNoticeRejected) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, translate(err)
	}
	fresh, err := s.Get(ctx, outTradeNo)
	if err != nil {
		return nil, 0, err
	}
	return fresh, out, nil
}

// RefundsDue returns up to limit trades whose refund is owed or in
// process and due to be tried at now.
func (s *Trades) RefundsDue(ctx context.Context, now time.Time, limit int) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("refund_state IN ? AND (refund_next IS NULL OR refund_next <= ?)",
		[]int{model.RefundRowDue, model.RefundRowProcessing}, now).Order("refund_next").Limit(limit).Find(&out).Error
	return out, translate(err)
}

// RefundsOf returns the order's trades whose refund is owed or in process.
func (s *Trades) RefundsOf(ctx context.Context, orderID int64) ([]model.PayTrade, error) {
	var out []model.PayTrade
	err := s.db.WithContext(ctx).Where("order_id = ? AND refund_state IN ?", orderID,
		[]int{model.RefundRowDue, model.RefundRowProcessing}).Find(&out).Error
	return out, translate(err)
}

// RefundLater records a refund try that did not finish: state (due or
// processing), one more attempt, the next try at next, the refund number
// the next try uses and why this one did not finish (note, cut to the
// column's 255 bytes).
func (s *Trades) RefundLater(ctx context.Context, outTradeNo string, state int, next time.Time, refundNo, note string) error {
	if len(note) > 255 {
		note = note[:255]
	}
	err := s.db.WithContext(ctx).Exec(`UPDATE tb_pay_trade SET refund_state = ?, refund_attempts = refund_attempts + 1, refund_next = ?,
  refund_no = ?, refund_note = ?
WHERE out_trade_no = ? AND refund_state IN ?`, state, next, refundNo, note, outTradeNo, []int{model.RefundRowDue, model.RefundRowProcessing}).Error
	return translate(err)
}

// Refunded records the trade's money back with the buyer at at, once. An
// order cancelled before the payment came becomes refunded (status 6)
// with the trade's reason; one its buyer asked to refund goes from 5
// refunding to 6 refunded; a paid order (refund of a second trade) stays
// paid. It reports whether this call recorded it.
func (s *Trades) Refunded(ctx context.Context, outTradeNo string, at, now time.Time) (bool, error) {
	done := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		done = false
		var t model.PayTrade
		if err := tx.Where("out_trade_no = ?", outTradeNo).Take(&t).Error; err != nil {
			return err
		}
		res := tx.Exec(`UPDATE tb_pay_trade SET refund_state = ?, refund_time = ?, refund_next = NULL
WHERE out_trade_no = ? AND refund_state IN ?`, model.RefundRowDone, at, outTradeNo,
			[]int{model.RefundRowDue, model.RefundRowProcessing})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		done = true
		switch t.RefundReason {
		case model.RefundDuplicatePaid:
			return nil
		case model.RefundByBuyer:
			return tx.Exec(`UPDATE tb_voucher_order SET status = ?, refund_time = ?, update_time = ?
WHERE id = ? AND status = ?`, model.OrderStatusRefunded, at, now, t.OrderID, model.OrderStatusRefunding).Error
		}
		return tx.Exec(`UPDATE tb_voucher_order SET status = ?, refund_time = ?, refund_reason = ?, update_time = ?
WHERE id = ? AND status = ?`, model.OrderStatusRefunded, at, t.RefundReason, now, t.OrderID, model.OrderStatusCancelled).Error
	})
	return done, translate(err)
}

// Refunds lists up to limit refunds of the voucher's trades: those not
// done first (the next try soonest first), then the latest done.
func (s *Trades) Refunds(ctx context.Context, voucherID int64, limit int) ([]model.RefundView, error) {
	var rows []model.PayTrade
	err := s.db.WithContext(ctx).Raw(`SELECT t.* FROM tb_pay_trade t JOIN tb_voucher_order o ON o.id = t.order_id
WHERE o.voucher_id = ? AND t.refund_state <> ?
ORDER BY CASE WHEN t.refund_state = ? THEN 1 ELSE 0 END, t.refund_next, t.refund_time DESC LIMIT ?`,
		voucherID, model.RefundRowNone, model.RefundRowDone, limit).Scan(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	out := make([]model.RefundView, len(rows))
	for i, t := range rows {
		out[i] = model.RefundView{OrderID: fmt.Sprint(t.OrderID), Provider: t.Provider, OutTradeNo: t.OutTradeNo, RefundNo: t.RefundNo,
			Amount: t.Amount, Reason: t.RefundReason, State: model.RefundStateName(t.RefundState), Attempts: t.RefundAttempts,
			Note: t.RefundNote, RefundTime: t.RefundTime}
		if t.RefundState != model.RefundRowDone {
			out[i].NextTry = t.RefundNext
		}
	}
	return out, nil
}

// Summary sums the money of the voucher's trades.
func (s *Trades) Summary(ctx context.Context, voucherID int64) (model.PaySummary, error) {
	var out model.PaySummary
	err := s.db.WithContext(ctx).Raw(`SELECT
  COALESCE(SUM(CASE WHEN t.state = ? THEN t.amount ELSE 0 END), 0) AS taken,
  COALESCE(SUM(CASE WHEN t.refund_state = ? THEN t.amount ELSE 0 END), 0) AS refunded,
  COALESCE(SUM(CASE WHEN t.refund_reason IN (?, ?) THEN 1 ELSE 0 END), 0) AS late,
  COALESCE(SUM(CASE WHEN t.refund_state IN (?, ?) THEN 1 ELSE 0 END), 0) AS refunds_owed
FROM tb_pay_trade t JOIN tb_voucher_order o ON o.id = t.order_id WHERE o.voucher_id = ?`,
		model.TradeRowPaid, model.RefundRowDone, model.RefundLatePayment, model.RefundUnreachable,
		model.RefundRowDue, model.RefundRowProcessing, voucherID).Scan(&out).Error
	return out, translate(err)
}
