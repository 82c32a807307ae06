// Package model holds the domain types of the seckill service and the domain
// errors every layer speaks. It imports nothing of the project.
package model

import "time"

// OrderIDEpoch is the start of order-id time (2022-01-01T00:00:00Z): an
// order id is the seconds since it shifted left 32 bits, OR a 32-bit
// sequence.
var OrderIDEpoch = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// OrderIDTime returns the second an order id was made (its upper 31 bits).
func OrderIDTime(orderID int64) time.Time {
	return OrderIDEpoch.Add(time.Duration(orderID>>32) * time.Second)
}

// Roles stored with a user and carried in its token.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
	// RoleStaff redeems vouchers at the counter of the one shop it is
	// bound to (tb_shop_staff, docs/redemption.md).
	RoleStaff = "staff"
)

// User is a row of tb_user.
type User struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement"`
	Phone      string    `gorm:"column:phone"`
	Password   string    `gorm:"column:password"`
	NickName   string    `gorm:"column:nick_name"`
	Icon       string    `gorm:"column:icon"`
	Role       string    `gorm:"column:role"`
	CreateTime time.Time `gorm:"column:create_time"`
	UpdateTime time.Time `gorm:"column:update_time"`
}

// TableName is the Heima table name.
func (User) TableName() string { return "tb_user" }

// Voucher is a row of tb_voucher.
type Voucher struct {
	ID          int64  `gorm:"column:id;primaryKey;autoIncrement"`
	ShopID      int64  `gorm:"column:shop_id"`
	Title       string `gorm:"column:title"`
	SubTitle    string `gorm:"column:sub_title"`
	Rules       string `gorm:"column:rules"`
	PayValue    int64  `gorm:"column:pay_value"`
	ActualValue int64  `gorm:"column:actual_value"`
	Type        int    `gorm:"column:type"`
	Status      int    `gorm:"column:status"`
	// UseDays and UseUntil bound when the voucher may be redeemed
	// (UseWindow): ISO weekdays "1,2,3,4,5" and the last day "2006-01-02";
	// empty means no bound.
	UseDays    string    `gorm:"column:use_days"`
	UseUntil   string    `gorm:"column:use_until"`
	CreateTime time.Time `gorm:"column:create_time"`
	UpdateTime time.Time `gorm:"column:update_time"`
}

// TableName is the Heima table name.
func (Voucher) TableName() string { return "tb_voucher" }

// VoucherTypeSeckill is the voucher type of seckill vouchers.
const VoucherTypeSeckill = 1

// Voucher statuses of tb_voucher.status (the course's numbers).
const (
	VoucherStatusOnSale = 1 // published
	VoucherStatusClosed = 2 // closed by an admin: its sale ended then
)

// VoucherEdit is the new content of a voucher whose sale has not started.
// Stock is the new initial stock.
type VoucherEdit struct {
	Title       string
	SubTitle    string
	Rules       string
	PayValue    int64
	ActualValue int64
	Stock       int
	BeginTime   time.Time
	EndTime     time.Time
	// WaitingRoom turns the voucher's waiting room on or off; nil keeps it.
	WaitingRoom *bool
}

// SeckillVoucher is a row of tb_seckill_voucher: the stock and the sale window.
type SeckillVoucher struct {
	VoucherID    int64     `gorm:"column:voucher_id;primaryKey;autoIncrement:false"`
	Stock        int       `gorm:"column:stock"`
	InitialStock int       `gorm:"column:initial_stock"`
	BeginTime    time.Time `gorm:"column:begin_time"`
	EndTime      time.Time `gorm:"column:end_time"`
	// StockBuckets is how many buckets the voucher's Redis stock is split
	// in (async mode; 1, or 0 in rows written before the column: one).
	StockBuckets int `gorm:"column:stock_buckets"`
	// WaitingRoom sells the voucher only to buyers its waiting room
	// admitted (docs/waiting-room.md).
	WaitingRoom bool      `gorm:"column:waiting_room"`
	CreateTime  time.Time `gorm:"column:create_time"`
	UpdateTime  time.Time `gorm:"column:update_time"`
}

// TableName is the Heima table name.
func (SeckillVoucher) TableName() string { return "tb_seckill_voucher" }

// SaleTime is t as a sale's begin or end keeps it: whole seconds, as the
// database's DATETIME columns do. Publishing and editing take it, so the
// window Redis holds from the publish is the window every later read of
// the row (the caches, a rebuild) finds.
func SaleTime(t time.Time) time.Time { return t.Truncate(time.Second) }

// MaxStockBuckets is the most buckets a voucher's Redis stock can be split
// in (the key layout's shards: each bucket on a slot of its own).
const MaxStockBuckets = 16

// Buckets is StockBuckets, at least 1.
func (v *SeckillVoucher) Buckets() int { return max(v.StockBuckets, 1) }

// HomeBucket is the bucket tried first for a user's order of a voucher of
// n buckets. It holds the user's buyer mark.
func HomeBucket(userID int64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(uint64(userID) % uint64(n))
}

// SeckillVoucherInfo is a voucher together with its seckill fields.
type SeckillVoucherInfo struct {
	Voucher
	Stock        int
	InitialStock int
	BeginTime    time.Time
	EndTime      time.Time
	WaitingRoom  bool
}

// Order statuses of tb_voucher_order.status, in Heima's numbers.
// 1 is unpaid: the order holds its unit of stock. 2 is paid. 3 is used:
// redeemed at the shop's counter (it keeps its unit, like paid).
// 4 is cancelled by the buyer or the pay timeout; CancelReason says which.
// A cancelled order's unit is back on sale.
// Pending and failed exist only in Redis, in async mode.
const (
	OrderStatusPending   = 0 // async mode: admitted in Redis, not yet written
	OrderStatusCreated   = 1 // written to the database, unpaid
	OrderStatusPaid      = 2 // paid: keeps its unit for good
	OrderStatusUsed      = 3 // redeemed at the shop: use_time says when
	OrderStatusCancelled = 4 // cancelled or expired: its unit is back on sale
	OrderStatusRefunding = 5 // its buyer asked for the money back; the provider has not confirmed it yet
	OrderStatusRefunded  = 6 // the money is back with the buyer (RefundReason says why)
	OrderStatusFailed    = 9 // async mode: given up, stock returned
)

// UnitBackSQL is the condition on a tb_voucher_order row whose unit is
// back on sale: cancelled or expired (4), refunded after it was cancelled
// (6 with a cancel_time: a payment that came too late), or refunded on its
// buyer's request while the sale lasted (5 or 6 with unit_back). It is the
// one rule: the audits and the stores read it.
const UnitBackSQL = "(status = 4 OR (status IN (5, 6) AND (cancel_time IS NOT NULL OR unit_back = 1)))"

// OrderStatusUnpaid is OrderStatusCreated under Heima's name.
const OrderStatusUnpaid = OrderStatusCreated

// Cancel reasons of tb_voucher_order.cancel_reason.
const (
	CancelByBuyer   = "buyer"   // POST /voucher-order/:orderId/cancel
	CancelByTimeout = "timeout" // unpaid past the pay timeout: expired
)

// OrderStatusName names a status for API responses.
func OrderStatusName(s int) string {
	switch s {
	case OrderStatusPending:
		return "pending"
	case OrderStatusCreated:
		return "created" // unpaid; the word clients already know
	case OrderStatusPaid:
		return "paid"
	case OrderStatusUsed:
		return "used"
	case OrderStatusCancelled:
		return "cancelled"
	case OrderStatusFailed:
		return "failed"
	case OrderStatusRefunding:
		return "refunding"
	case OrderStatusRefunded:
		return "refunded"
	default:
		return "unknown"
	}
}

// StatusName names the order's status for API responses: an order the
// pay timeout cancelled is "expired", one its buyer cancelled "cancelled".
func (o *VoucherOrder) StatusName() string {
	if o.Status == OrderStatusCancelled && o.CancelReason == CancelByTimeout {
		return "expired"
	}
	return OrderStatusName(o.Status)
}

// Live reports an order that holds its unit of stock: unpaid, paid or
// used.
func (o *VoucherOrder) Live() bool {
	return o.Status == OrderStatusCreated || o.Status == OrderStatusPaid || o.Status == OrderStatusUsed
}

// VoucherOrder is a row of tb_voucher_order.
type VoucherOrder struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement:false"`
	UserID     int64     `gorm:"column:user_id"`
	VoucherID  int64     `gorm:"column:voucher_id"`
	PayType    int       `gorm:"column:pay_type"`
	Status     int       `gorm:"column:status"`
	FenceToken *int64    `gorm:"column:fence_token"`
	CreateTime time.Time `gorm:"column:create_time"`
	UpdateTime time.Time `gorm:"column:update_time"`
	// PayTime, PayAmount and PayKey record the payment (status 2): when,
	// the amount (the voucher's pay value) and the Idempotency-Key sent.
	PayTime   *time.Time `gorm:"column:pay_time"`
	PayAmount *int64     `gorm:"column:pay_amount"`
	PayKey    *string    `gorm:"column:pay_key"`
	// CancelTime and CancelReason record a cancel (status 4).
	CancelTime   *time.Time `gorm:"column:cancel_time"`
	CancelReason string     `gorm:"column:cancel_reason"`
	// GivebackDue says Redis still owes the order's unit back (async
	// mode): set by the cancel, cleared once the give-back script ran.
	GivebackDue bool `gorm:"column:giveback_due"`
	// RefundTime and RefundReason record a refund (status 6): a payment
	// that came after the order was cancelled is refunded (late_payment);
	// the buyer's refund (buyer) goes through 5 refunding first.
	RefundTime   *time.Time `gorm:"column:refund_time"`
	RefundReason string     `gorm:"column:refund_reason"`
	// UnitBack says the buyer's refund put the order's unit back on sale:
	// it was asked for while the sale lasted (model.UnitBackSQL).
	UnitBack bool `gorm:"column:unit_back"`
	// RedeemCode is the code the buyer shows at the shop, made on the
	// owner's first read of the paid order (docs/redemption.md); UseTime
	// is when the shop's staff redeemed it (status 3).
	RedeemCode *string    `gorm:"column:redeem_code"`
	UseTime    *time.Time `gorm:"column:use_time"`
}

// TableName is the Heima table name.
func (VoucherOrder) TableName() string { return "tb_voucher_order" }

// Fence is the fencing token a lock holder presents with its write.
// The write is refused when a newer token was used for the same lock key.
type Fence struct {
	Key   string
	Token int64
}

// Audit is the state of one voucher against the invariants of docs/contract.md.
// Orders counts the orders holding a unit (unpaid, paid, used, refunded
// after the sale's end); Cancelled
// those whose unit is back on sale (Expired of them by the pay timeout).
type Audit struct {
	VoucherID    int64 `json:"voucherId"`
	InitialStock int   `json:"initialStock"`
	Stock        int   `json:"stock"`
	Orders       int64 `json:"orders"`
	Unpaid       int64 `json:"unpaid"`
	Paid         int64 `json:"paid"`
	// Used counts the paid orders redeemed at the shop; Refunding and
	// Refunded the refunds their buyers asked for, in flight and done.
	Used                int64  `json:"used"`
	Refunding           int64  `json:"refunding"`
	Refunded            int64  `json:"refunded"`
	Cancelled           int64  `json:"cancelled"`
	Expired             int64  `json:"expired"`
	PaidCancelled       int64  `json:"paidCancelled"`
	DistinctUsers       int64  `json:"distinctUsers"`
	DuplicateRejections int64  `json:"duplicateRejections"`
	Oversold            bool   `json:"oversold"`
	Consistent          bool   `json:"consistent"`
	RedisStock          *int64 `json:"redisStock,omitempty"`
	Pending             *int64 `json:"pending,omitempty"`
	// GivebacksDue counts cancelled orders whose unit Redis has not taken
	// back yet (async mode).
	GivebacksDue *int64 `json:"givebacksDue,omitempty"`
	// WaitingRoom is the voucher's waiting room (vouchers with one).
	WaitingRoom *RoomAudit `json:"waitingRoom,omitempty"`
	// Payments is the sale's money at the pay providers (when one is
	// enabled).
	Payments *PaySummary `json:"payments,omitempty"`
}

// VoucherSnapshot is what the database says about one voucher, in one snapshot.
// It holds the stock and initial stock, the orders by status and the distinct
// buyers. Asked about stream entries, Written says which of their orders are
// written. Both audits read it. Orders counts the orders holding a unit
// (unpaid, paid, used, refunded after the sale's end); DistinctUsers counts
// the buyers of every order.
type VoucherSnapshot struct {
	Stock, InitialStock   int
	Orders, DistinctUsers int64
	Unpaid, Paid          int64
	// Used were redeemed at the shop; Refunding and Refunded are the
	// refunds their buyers asked for (in flight, money back).
	Used, Refunding, Refunded int64
	Cancelled                 int64
	Expired                   int64
	PaidCancelled             int64 // cancelled orders with a payment: must be 0
	Written                   map[int64]bool
}

// Audit returns the snapshot as an audit of voucherID (no Redis side).
func (t VoucherSnapshot) Audit(voucherID, duplicateRejections int64) *Audit {
	return &Audit{
		VoucherID: voucherID, InitialStock: t.InitialStock, Stock: t.Stock,
		Orders: t.Orders, Unpaid: t.Unpaid, Paid: t.Paid, Used: t.Used, Refunding: t.Refunding, Refunded: t.Refunded,
		Cancelled: t.Cancelled,
		Expired:   t.Expired, PaidCancelled: t.PaidCancelled,
		DistinctUsers: t.DistinctUsers, DuplicateRejections: duplicateRejections,
	}
}

// Counts is the audit as the counts the invariants are judged on (no Redis
// side: CheckAsync adds it).
func (a *Audit) Counts() Counts {
	return Counts{InitialStock: int64(a.InitialStock), Stock: int64(a.Stock),
		Orders: a.Orders, Cancelled: a.Cancelled, PaidCancelled: a.PaidCancelled,
		DistinctUsers: a.DistinctUsers}
}

// Check fills Oversold and Consistent from the counts (invariants 1 to 3
// and 6, Counts.Violations).
func (a *Audit) Check() { a.judge(a.Counts()) }

func (a *Audit) judge(c Counts) {
	a.Oversold = c.Oversold()
	a.Consistent = len(c.Violations()) == 0
}
