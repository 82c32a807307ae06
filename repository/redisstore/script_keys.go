package redisstore

// The KEYS of each script this package runs, built in one function per
// script. The script's header in scripts/ lists them. script_keys_test.go
// checks that each function builds what the header says.

// SeckillKeys are the KEYS of seckill.lua for an order of the voucher in
// its first bucket, admitted into the stream named stream.
func SeckillKeys(stream string, voucherID, orderID int64) []string {
	return SeckillKeysIn(stream, VoucherShard(voucherID), voucherID, orderID)
}

// SeckillKeysIn are the KEYS of seckill.lua in the bucket of shard.
func SeckillKeysIn(stream string, shard int, voucherID, orderID int64) []string {
	return []string{StockKeyIn(shard, voucherID), BuyersKeyIn(shard, voucherID),
		VoucherKeyIn(shard, voucherID), ShardKey(shard, stream), OrderInfoKey(shard, orderID)}
}

// settleKeys are the KEYS of seckill_settle.lua.
func settleKeys(shard int, orderID int64) []string {
	return []string{OrderInfoKey(shard, orderID)}
}

// releaseKeys are the KEYS of seckill_release.lua in the home bucket.
func releaseKeys(homeShard int, voucherID, orderID int64) []string {
	return []string{BuyersKeyIn(homeShard, voucherID), OrderInfoKey(homeShard, orderID)}
}

// deadLetterKeys are the KEYS of deadletter.lua for an entry of shard's
// stream named stream, whose dead-letter stream is named dlq.
func deadLetterKeys(stream, dlq string, shard int, voucherID, orderID int64) []string {
	return []string{ShardKey(shard, stream), ShardKey(shard, dlq),
		StockKeyIn(shard, voucherID), BuyersKeyIn(shard, voucherID),
		VoucherKeyIn(shard, voucherID), OrderInfoKey(shard, orderID)}
}

// touchKeys are the KEYS of touch.lua for shard's stream named stream.
func touchKeys(stream string, shard int) []string {
	return []string{ShardKey(shard, stream)}
}

// giveBackKeys are the KEYS of giveback.lua in the bucket of shard.
func giveBackKeys(shard int, voucherID int64) []string {
	return []string{StockKeyIn(shard, voucherID), ReturnedKeyIn(shard, voucherID)}
}

// idempotencyKeys are the KEYS of idempotency_begin.lua and
// idempotency_finish.lua.
func idempotencyKeys(userID int64, key string) []string {
	return []string{IdempotencyKey(userID, key), IdempotencyIndexKey(userID)}
}

// codeKeys are the KEYS of check_code.lua.
func codeKeys(phone string) []string { return []string{LoginCodeKey(phone)} }

// roomKeys are the KEYS of waiting_room.lua.
func roomKeys(voucherID int64) []string {
	return []string{RoomKey(voucherID), RoomPoolKey(voucherID), RoomLineKey(voucherID),
		RoomAdmittedKey(voucherID), RoomDoneKey(voucherID)}
}
