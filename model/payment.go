package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pay types of tb_voucher_order.pay_type, in Heima's numbers.
const (
	PayBalance = 1 // the simulated payment (development only)
	PayAlipay  = 2
	PayWechat  = 3
)

// Provider names, as SECKILL_PAY_PROVIDERS and the pay call spell them.
const (
	ProviderSimulated = "simulated"
	ProviderAlipay    = "alipay"
	ProviderWechat    = "wechat"
)

// PayTypeOf is the pay_type a provider's payment records.
func PayTypeOf(provider string) int {
	switch provider {
	case ProviderAlipay:
		return PayAlipay
	case ProviderWechat:
		return PayWechat
	}
	return PayBalance
}

// PayTypeName names a pay_type for the order's JSON.
func PayTypeName(t int) string {
	switch t {
	case PayAlipay:
		return ProviderAlipay
	case PayWechat:
		return ProviderWechat
	}
	return "balance"
}

// Refund reasons (tb_voucher_order.refund_reason, the order's refundReason).
const (
	RefundByBuyer       = "buyer"
	RefundLatePayment   = "late_payment"         // paid after the order was cancelled or expired
	RefundUnreachable   = "unreachable_provider" // the order was cancelled while its trade's state was unknown
	RefundDuplicatePaid = "duplicate_payment"    // a second trade of an order already paid
)

// ErrNotRefundable refuses a refund of an order that holds no payment to
// give back: unpaid, cancelled, expired, or refunded for another reason
// (NOT_REFUNDABLE). A used voucher is ErrVoucherUsed.
var ErrNotRefundable = errors.New("order not refundable")

// Fen is an amount of money in fen (cents of yuan): integers end to end.
type Fen int64

// Yuan writes the amount as providers' decimal strings ("12.34").
func (f Fen) Yuan() string {
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	return fmt.Sprintf("%s%d.%02d", sign, f/100, f%100)
}

// ParseYuan reads a decimal yuan string ("12.34", "12.3", "12") as fen,
// without floating point. More than two decimals is an error.
func ParseYuan(s string) (Fen, error) {
	whole, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	if whole == "" || len(frac) > 2 || strings.HasPrefix(whole, "+") || strings.HasPrefix(whole, "-") {
		return 0, fmt.Errorf("amount %q: want yuan with at most two decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1<<40 {
		return 0, fmt.Errorf("amount %q: want yuan with at most two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	c, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || c < 0 {
		return 0, fmt.Errorf("amount %q: want yuan with at most two decimals", s)
	}
	return Fen(w*100 + c), nil
}

// TradeRequest opens a trade for an order at a provider.
type TradeRequest struct {
	// OutTradeNo is ours, unique per attempt; it maps back to the order.
	OutTradeNo string
	OrderID    int64
	Amount     Fen
	// Subject is the line the buyer sees in the provider's app.
	Subject string
	// ExpireAt is the order's pay deadline: the provider refuses to take
	// money after it.
	ExpireAt time.Time
	// NotifyURL is where the provider posts the trade's notifications.
	NotifyURL string
}

// Checkout is what a buyer needs to pay a trade: a QR code's content to
// scan, and for Alipay also a page-pay URL.
type Checkout struct {
	QRCode string
	PayURL string
}

// TradeState is a trade's state at the provider.
type TradeState int

// Trade states.
const (
	TradeMissing TradeState = iota // the provider does not know it (never created, or before the scan)
	TradeOpen                      // waiting for the buyer
	TradePaid                      // the money is taken
	TradeClosed                    // closed or expired unpaid
)

func (s TradeState) String() string {
	return [...]string{"missing", "open", "paid", "closed"}[s]
}

// TradeStatus is a trade as the provider answers a query.
type TradeStatus struct {
	State           TradeState
	ProviderTradeNo string
	Amount          Fen
	PaidAt          time.Time
}

// RefundRequest gives money of a paid trade back.
type RefundRequest struct {
	OutTradeNo string
	// OutRefundNo makes the refund idempotent at the provider.
	OutRefundNo string
	Amount      Fen // refunded
	Total       Fen // the trade's amount
	Reason      string
	NotifyURL   string
}

// RefundState is a refund's state at the provider.
type RefundState int

// Refund states.
const (
	RefundMissing    RefundState = iota // not known to the provider
	RefundProcessing                    // accepted, money not back yet
	RefundDone                          // the money is back with the buyer
	RefundFailed                        // refused or abnormal: needs a person
)

func (s RefundState) String() string {
	return [...]string{"missing", "processing", "done", "failed"}[s]
}

// RefundStatus is a refund as the provider answers.
type RefundStatus struct {
	State      RefundState
	RefundedAt time.Time
}

// NoticeKind says what a provider's notification is about.
type NoticeKind int

// Notification kinds.
const (
	NoticeTrade  NoticeKind = iota // a trade's state (paid, closed)
	NoticeRefund                   // a refund's state
)

// PayNotice is a provider's notification, verified and parsed.
type PayNotice struct {
	Kind            NoticeKind
	OutTradeNo      string
	ProviderTradeNo string
	OutRefundNo     string
	Trade           TradeState  // NoticeTrade
	Refund          RefundState // NoticeRefund
	Amount          Fen         // the trade's total
	Currency        string      // "CNY"
	At              time.Time   // paid or refunded at, by the provider
}

// ErrNoticeRejected refuses a notification: nothing is changed. The
// NoticeRejectedError says why, in a word fit for a metric label.
var ErrNoticeRejected = errors.New("notification rejected")

// NoticeRejectedError is a rejected notification and its reason:
// signature, app, stale, amount, currency, unknown_trade, malformed.
type NoticeRejectedError struct {
	Reason string
	Detail string
}

func (e *NoticeRejectedError) Error() string {
	return "notification rejected: " + e.Reason + ": " + e.Detail
}

// Is makes a *NoticeRejectedError match ErrNoticeRejected.
func (e *NoticeRejectedError) Is(target error) bool { return target == ErrNoticeRejected }

// RejectNotice returns the rejection of a notification for reason.
func RejectNotice(reason, format string, args ...any) error {
	return &NoticeRejectedError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Trade states of tb_pay_trade.state.
const (
	TradeRowOpen    = 1 // created (or being created) at the provider, unpaid
	TradeRowPaid    = 2 // the provider took the money
	TradeRowClosed  = 3 // closed at the provider, or never created there
	TradeRowUnknown = 4 // the provider stayed unreachable past the bound: given up, the order cancelled
)

// Refund states of tb_pay_trade.refund_state.
const (
	RefundRowNone       = 0
	RefundRowDue        = 1 // owed: the next try asks the provider
	RefundRowProcessing = 2 // accepted by the provider, money not back yet
	RefundRowDone       = 3 // the money is back with the buyer
)

// PayTrade is a row of tb_pay_trade: one trade opened at a provider for
// an order, one per attempt.
type PayTrade struct {
	OutTradeNo      string     `gorm:"column:out_trade_no;primaryKey"`
	OrderID         int64      `gorm:"column:order_id"`
	Provider        string     `gorm:"column:provider"`
	Amount          Fen        `gorm:"column:amount"`
	State           int        `gorm:"column:state"`
	QRCode          string     `gorm:"column:qr_code"`
	PayURL          string     `gorm:"column:pay_url"`
	ProviderTradeNo string     `gorm:"column:provider_trade_no"`
	CreateTime      time.Time  `gorm:"column:create_time"`
	ExpireTime      time.Time  `gorm:"column:expire_time"`
	PayTime         *time.Time `gorm:"column:pay_time"`
	RefundNo        string     `gorm:"column:refund_no"`
	RefundReason    string     `gorm:"column:refund_reason"`
	RefundState     int        `gorm:"column:refund_state"`
	RefundAttempts  int        `gorm:"column:refund_attempts"`
	RefundNext      *time.Time `gorm:"column:refund_next"`
	RefundTime      *time.Time `gorm:"column:refund_time"`
	// RefundNote is why the last refund try did not finish (the
	// provider's answer or error), for the admin.
	RefundNote string `gorm:"column:refund_note"`
}

// TableName is the trades' table.
func (PayTrade) TableName() string { return "tb_pay_trade" }

// Checkout is what the trade's buyer needs to pay it.
func (t *PayTrade) Checkout() Checkout { return Checkout{QRCode: t.QRCode, PayURL: t.PayURL} }

// PaidOutcome is what applying a paid trade did to its order.
type PaidOutcome int

// Outcomes of a paid trade.
const (
	PaidNow      PaidOutcome = iota // the order is paid by this trade now
	PaidRepeated                    // applied before: nothing changed
	PaidRefund                      // the order could not take it (cancelled, expired, paid by another trade): refund owed
)

// RefundView is one refund of a voucher's sale as the admin sees it: owed
// and processing ones are retried with backoff until the provider
// confirms the money back.
type RefundView struct {
	OrderID    string     `json:"orderId"`
	Provider   string     `json:"provider"`
	OutTradeNo string     `json:"outTradeNo"`
	RefundNo   string     `json:"refundNo"`
	Amount     Fen        `json:"amount"`
	Reason     string     `json:"reason"`
	State      string     `json:"state"` // owed, processing, done
	Attempts   int        `json:"attempts"`
	NextTry    *time.Time `json:"nextTry,omitempty"`
	Note       string     `json:"note,omitempty"`
	RefundTime *time.Time `json:"refundTime,omitempty"`
}

// RefundStateName names a tb_pay_trade.refund_state for RefundView.
func RefundStateName(state int) string {
	switch state {
	case RefundRowDue:
		return "owed"
	case RefundRowProcessing:
		return "processing"
	case RefundRowDone:
		return "done"
	}
	return "none"
}

// PaySummary is the money of one voucher's sale at the pay providers.
type PaySummary struct {
	Taken       Fen   `json:"taken"`       // by paid trades
	Refunded    Fen   `json:"refunded"`    // by refunds done
	Late        int64 `json:"late"`        // payments refunded as late or of a trade given up
	RefundsOwed int64 `json:"refundsOwed"` // refunds not done yet (retried with backoff)
}
