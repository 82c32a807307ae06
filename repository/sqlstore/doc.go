// Package sqlstore implements the service's database stores with GORM.
// It runs on MySQL or MariaDB, or on the embedded SQLite file.
// Driver errors become model errors here and never escape.
//
// The order transaction and its one rule are in voucher_order.go.
// There Orders joins the order table's stores: OrderCommits (the same
// file), GroupCommits (group_commit.go), QueuedOrders (queued.go),
// OrderReads (reads.go) and OrderLifecycle (lifecycle.go). Users,
// Vouchers, Shops, Revocations, NamedValues and DemoMarks hold the other
// tables.
package sqlstore
