package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Redemptions keeps the orders' redemption codes (tb_voucher_order's
// redeem_code, unique) and redeems them: one conditional UPDATE on the
// status and the code, so two counters scanning one code at once redeem
// it once.
type Redemptions struct{ db *gorm.DB }

// NewRedemptions returns the redemption store.
func NewRedemptions(db *DB) *Redemptions { return &Redemptions{db: db.Gorm} }

// codeDraws bounds the draws of a code that meets another order's (50
// bits: a second draw is already next to never needed).
const codeDraws = 5

// EnsureCode returns the code of the user's paid order, drawing one with
// draw and storing it when the order has none. An order that is not paid
// and has no code answers "". model.ErrOrderNotFound: no such order of the
// user.
func (r *Redemptions) EnsureCode(ctx context.Context, userID, orderID int64, draw func() string) (string, error) {
	db := r.db.WithContext(ctx)
	for range codeDraws {
		res := db.Exec(`UPDATE tb_voucher_order SET redeem_code = ?
WHERE id = ? AND user_id = ? AND status = ? AND redeem_code IS NULL`, draw(), orderID, userID, model.OrderStatusPaid)
		if res.Error != nil && !isUniqueViolation(res.Error) {
			return "", translate(res.Error)
		}
		var rows []struct{ RedeemCode sql.NullString }
		if err := db.Raw("SELECT redeem_code FROM tb_voucher_order WHERE id = ? AND user_id = ?", orderID, userID).
			Scan(&rows).Error; err != nil {
			return "", translate(err)
		}
		switch {
		case len(rows) == 0:
			return "", model.ErrOrderNotFound
		case rows[0].RedeemCode.Valid:
			return rows[0].RedeemCode.String, nil
		case res.Error == nil:
			return "", nil // not paid (any more): no code
		}
		// The code drawn is another order's: draw again.
	}
	return "", fmt.Errorf("order %d: %d redemption codes drawn, each taken", orderID, codeDraws)
}

// Target finds the order of code at the shop, with its voucher's use
// window: model.ErrRedeemCodeInvalid when no order of the shop's vouchers
// has the code (an order of another shop included).
func (r *Redemptions) Target(ctx context.Context, shopID int64, code string) (*model.RedeemTarget, error) {
	var rows []model.RedeemTarget
	err := r.db.WithContext(ctx).Raw(`SELECT o.id AS order_id, o.voucher_id AS voucher_id, o.status AS status,
  o.use_time AS use_time, v.title AS title, v.actual_value AS actual_value, v.use_days AS use_days, v.use_until AS use_until
FROM tb_voucher_order o JOIN tb_voucher v ON v.id = o.voucher_id
WHERE o.redeem_code = ? AND v.shop_id = ?`, code, shopID).Scan(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, model.ErrRedeemCodeInvalid
	}
	return &rows[0], nil
}

// Use marks the order of code used at now if it is paid: true when this
// call did. One conditional UPDATE: of two calls at once, one wins. The
// order's row is locked by its primary key first, as the buyer's refund
// locks it: an UPDATE whose plan took the status index first would hold
// that index's entry while it waits for the row, and deadlock against a
// refund holding the row (seen on MariaDB).
func (r *Redemptions) Use(ctx context.Context, orderID int64, code string, now time.Time) (bool, error) {
	used := false
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		used = false
		var ids []int64
		if err := tx.Raw("SELECT id FROM tb_voucher_order WHERE id = ?"+forUpdate(tx), orderID).Scan(&ids).Error; err != nil || len(ids) == 0 {
			return err
		}
		res := tx.Exec(`UPDATE tb_voucher_order SET status = ?, use_time = ?, update_time = ?
WHERE id = ? AND redeem_code = ? AND status = ?`, model.OrderStatusUsed, now, now, orderID, code, model.OrderStatusPaid)
		used = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return false, translate(err)
	}
	return used, nil
}

// Staff binds users to shops as their staff (tb_shop_staff, role staff).
type Staff struct{ db *gorm.DB }

// NewStaff returns the staff store.
func NewStaff(db *DB) *Staff { return &Staff{db: db.Gorm} }

// Add makes the user of phone (created when missing) staff of the shop.
// Already staff of it answers the same. Refusals: model.ErrShopNotFound,
// an admin (admins are not staff), staff of another shop (remove it there
// first).
func (r *Staff) Add(ctx context.Context, shopID int64, phone string) (*model.User, error) {
	db := r.db.WithContext(ctx)
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM tb_shop WHERE id = ?", shopID).Scan(&n).Error; err != nil {
		return nil, translate(err)
	}
	if n == 0 {
		return nil, model.ErrShopNotFound
	}
	users := &Users{db: r.db}
	u, err := users.FindByPhone(ctx, phone)
	if errors.Is(err, model.ErrUserNotFound) {
		u = &model.User{Phone: phone, NickName: "staff_" + phone[max(len(phone)-4, 0):], Role: model.RoleStaff}
		err = users.Create(ctx, u)
	}
	if err != nil {
		return nil, err
	}
	if u.Role == model.RoleAdmin {
		return nil, model.InvalidArgument("phone", fmt.Sprintf("user %d is an admin; an admin cannot be staff", u.ID))
	}
	err = db.Exec("INSERT INTO tb_shop_staff (user_id, shop_id, create_time) VALUES (?, ?, ?)", u.ID, shopID, time.Now()).Error
	if err != nil && !isUniqueViolation(err) {
		return nil, translate(err)
	}
	var bound int64
	if err := db.Raw("SELECT shop_id FROM tb_shop_staff WHERE user_id = ?", u.ID).Scan(&bound).Error; err != nil {
		return nil, translate(err)
	}
	if bound != shopID {
		return nil, model.InvalidArgument("phone", fmt.Sprintf("user %d is staff of shop %d; remove it there first", u.ID, bound))
	}
	if err := db.Exec("UPDATE tb_user SET role = ? WHERE id = ? AND role = ?", model.RoleStaff, u.ID, model.RoleUser).Error; err != nil {
		return nil, translate(err)
	}
	u.Role = model.RoleStaff
	return u, nil
}

// Remove unbinds the user from the shop and makes it an ordinary user
// again: false when it was not staff of the shop. It takes effect on the
// next redemption, which reads the binding.
func (r *Staff) Remove(ctx context.Context, shopID, userID int64) (bool, error) {
	removed := false
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM tb_shop_staff WHERE user_id = ? AND shop_id = ?", userID, shopID)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		removed = true
		return tx.Exec("UPDATE tb_user SET role = ? WHERE id = ? AND role = ?", model.RoleUser, userID, model.RoleStaff).Error
	})
	return removed, translate(err)
}

// Access returns the user's current role, its not_before (zero when not
// revoked) and the shop it is staff of (0: none), in one read;
// model.ErrUserNotFound when no user has the id.
func (r *Staff) Access(ctx context.Context, userID int64) (role string, notBefore time.Time, shopID int64, err error) {
	var rows []struct {
		Role      string
		NotBefore sql.NullInt64
		ShopID    sql.NullInt64
	}
	err = r.db.WithContext(ctx).Raw(`SELECT u.role AS role, r.not_before AS not_before, s.shop_id AS shop_id FROM tb_user u
LEFT JOIN tb_token_revocation r ON r.user_id = u.id LEFT JOIN tb_shop_staff s ON s.user_id = u.id WHERE u.id = ?`, userID).Scan(&rows).Error
	if err != nil {
		return "", time.Time{}, 0, translate(err)
	}
	if len(rows) == 0 {
		return "", time.Time{}, 0, model.ErrUserNotFound
	}
	if rows[0].NotBefore.Valid {
		notBefore = time.Unix(rows[0].NotBefore.Int64, 0)
	}
	return rows[0].Role, notBefore, rows[0].ShopID.Int64, nil
}
