// Package redisstore implements the service's Redis stores with go-redis.
// keys.go names every key of the stores, its shard and its TTL; the audit,
// the tests and the tools take their key names from there.
// Each Lua script of scripts/ (package scripts, beside the store) is run
// from here with the KEYS the script's header lists. script_keys_test.go checks the two agree.
//
// Admission runs the admission scripts. VoucherStates loads and reads a
// voucher's buckets. Epochs names who answers and what epoch it holds.
// OrderStream is the order streams of the shards.
package redisstore
