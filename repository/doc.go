// Package repository holds the Redis Cluster hash slot of a key (slot.go),
// which the Redis store's shards and the tools compute.
//
// The stores live in two packages below it, one per backend.
// repository/sqlstore is GORM over MySQL, MariaDB or SQLite.
// repository/redisstore is go-redis, and names every Redis key of the
// stores (redisstore/keys.go). Both implement the narrow store interfaces
// of package service.
package repository
