package model

import "time"

// BillKind says what a line of a provider's bill is.
type BillKind int

// Bill line kinds.
const (
	BillPayment BillKind = iota // money taken from a buyer
	BillRefund                  // money given back to a buyer
)

func (k BillKind) String() string {
	if k == BillRefund {
		return "refund"
	}
	return "payment"
}

// BillLine is one line of a provider's daily bill: a payment or a refund.
type BillLine struct {
	Kind            BillKind
	OutTradeNo      string
	OutRefundNo     string // refunds only
	ProviderTradeNo string
	Amount          Fen // the payment's or the refund's amount, > 0
	At              time.Time
}

// RefundInFlight is a trade whose refund is owed or processing, and since
// when the refund is owed.
type RefundInFlight struct {
	Trade PayTrade
	Since time.Time
}

// Mismatch kinds: what reconciliation found between a provider and the
// orders (tb_pay_mismatch.kind, the metric's kind label).
const (
	// MismatchLostNotification: the provider says paid, no notification
	// came; the payment was applied by query (the order paid, or a refund
	// owed).
	MismatchLostNotification = "lost_notification"
	// MismatchRefundInFlight: a refund owed or processing longer than the
	// bound.
	MismatchRefundInFlight = "refund_in_flight"
	// MismatchBillNoOrder: the bill lists a payment no trade of ours has.
	MismatchBillNoOrder = "bill_no_order"
	// MismatchBillUnpaidHere: the bill lists a payment of a trade that is
	// not paid here, and the provider's query does not confirm it.
	MismatchBillUnpaidHere = "bill_unpaid_here"
	// MismatchAmount: the bill's amount differs from the trade's.
	MismatchAmount = "amount"
	// MismatchNotInBill: a trade paid here that day is missing from the
	// provider's bill.
	MismatchNotInBill = "not_in_bill"
	// MismatchRefundUnknown: the bill lists a refund that no trade of ours
	// asked for.
	MismatchRefundUnknown = "refund_unknown"
	// MismatchRefundNotRecorded: the bill lists a refund that is not
	// recorded done here.
	MismatchRefundNotRecorded = "refund_not_recorded"
	// MismatchRefundNotInBill: a refund recorded done here that day is
	// missing from the provider's bill.
	MismatchRefundNotInBill = "refund_not_in_bill"
)

// MismatchKinds are the kinds, in the order the docs list them.
var MismatchKinds = []string{
	MismatchLostNotification, MismatchRefundInFlight, MismatchBillNoOrder, MismatchBillUnpaidHere,
	MismatchAmount, MismatchNotInBill, MismatchRefundUnknown, MismatchRefundNotRecorded, MismatchRefundNotInBill,
}

// MismatchAction is what an operator does about a mismatch of kind.
func MismatchAction(kind string) string {
	switch kind {
	case MismatchLostNotification:
		return "nothing for the order (applied by query); check that the provider reaches the notify URL"
	case MismatchRefundInFlight:
		return "check the refund in the provider's merchant console; the pay sweeper keeps asking; refund by hand only if the provider refused it"
	case MismatchBillNoOrder:
		return "money taken for no order: find the payment in the merchant console and refund it by hand, then find out who opened the trade"
	case MismatchBillUnpaidHere:
		return "the bill says paid but the query does not: ask the provider; do not mark the order paid by hand"
	case MismatchAmount:
		return "the provider took another amount than the order's: refund the difference by hand or ask the buyer to pay it; investigate"
	case MismatchNotInBill:
		return "the order is paid here but the bill has no payment: query the trade in the merchant console; if it was not paid, the voucher was given for no money"
	case MismatchRefundUnknown:
		return "money given back that no order asked for: find who refunded it in the merchant console; the order still shows paid"
	case MismatchRefundNotRecorded:
		return "the provider refunded but the order does not show it: if the detail says recorded, nothing; otherwise ask the provider"
	case MismatchRefundNotInBill:
		return "the order shows refunded but the bill has no refund: query the refund in the merchant console; refund by hand if it was not made"
	}
	return "investigate"
}

// PayMismatch is a row of tb_pay_mismatch: one mismatch, recorded once per
// provider, kind, trade and bill day.
type PayMismatch struct {
	ID          int64     `gorm:"column:id;primaryKey" json:"id"`
	Provider    string    `gorm:"column:provider" json:"provider"`
	Kind        string    `gorm:"column:kind" json:"kind"`
	OutTradeNo  string    `gorm:"column:out_trade_no" json:"outTradeNo"`
	OutRefundNo string    `gorm:"column:out_refund_no" json:"outRefundNo,omitempty"`
	OrderID     *int64    `gorm:"column:order_id" json:"orderId,string,omitempty"`
	VoucherID   *int64    `gorm:"column:voucher_id" json:"voucherId,omitempty"`
	Amount      Fen       `gorm:"column:amount" json:"amount"`
	Detail      string    `gorm:"column:detail" json:"detail"`
	Action      string    `gorm:"column:action" json:"action"`
	BillDate    string    `gorm:"column:bill_date" json:"billDate"` // YYYY-MM-DD, Beijing time
	FirstSeen   time.Time `gorm:"column:first_seen" json:"firstSeen"`
}

// TableName is the mismatches' table.
func (PayMismatch) TableName() string { return "tb_pay_mismatch" }
