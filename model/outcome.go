package model

import "errors"

// The outcome of an async order (table tb_order_outcome): written, or
// dead-lettered (given up, its stock given back). The database records
// exactly one per order id, so an order is never both.

// ErrOrderDeadLettered means the order's outcome is recorded as dead.
// It must never be written; its dead letter is to be finished.
// The dead-letter script is idempotent.
var ErrOrderDeadLettered = errors.New("order dead-lettered")

// Outcome is the outcome recorded for an async order.
type Outcome struct {
	// Written: the order is in the database; its entry is to be
	// acknowledged.
	Written bool
	// Reason and Attempts of the dead letter recorded first, when not
	// Written.
	Reason   string
	Attempts int
}
