// Package repository names every Redis key the service uses, with its
// shard, its cluster slot and its TTL (keys.go, slot.go).
//
// The stores live in two packages below it, one per backend:
// repository/sqlstore (GORM over MySQL, MariaDB or SQLite) and
// repository/redisstore (go-redis). Both implement the narrow store
// interfaces that package service declares. The Redis store, the audit
// and the tools take their key names from here.
package repository
