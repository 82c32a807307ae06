// Package sqlstore implements the service's database stores with GORM.
// It runs on MySQL or MariaDB, or on the embedded SQLite file.
// Driver errors become model errors here and never escape.
//
// Orders holds the order table: the sync commits (commit.go), the
// consumer's writes (queued.go), the reads (reads.go) and the lifecycle.
// Users, Vouchers, Shops, Revocations and ServiceValues hold the rest.
package sqlstore
