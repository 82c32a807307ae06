// Package repository names every Redis key the service uses. Each key comes
// with its shard, its cluster slot and its TTL (keys.go, slot.go).
//
// The stores live in two packages below it, one per backend.
// repository/sqlstore is GORM over MySQL, MariaDB or SQLite.
// repository/redisstore is go-redis. Both implement the narrow store
// interfaces of package service. The Redis store, the audit and the tools
// take their key names from here.
package repository
