-- deadletter.lua: give up on one pending order of a shard's order stream
-- and give its stock and buyer mark back (as asked), exactly once, keeping
-- invariant 5. Every key is in the shard of the entry's bucket.
--
-- KEYS[1]  seckill:{<tag>}:orders  the shard's order stream
-- KEYS[2]  seckill:{<tag>}:orders.dlq  the shard's dead-letter stream
-- KEYS[3]  seckill:{<tag>}:stock:<voucherId>  the bucket's stock
-- KEYS[4]  seckill:{<tag>}:order:<voucherId>  the bucket's buyers
-- KEYS[5]  seckill:{<tag>}:voucher:<voucherId>  hash with the state
-- KEYS[6]  seckill:{<tag>}:orderinfo:<orderId>  the order's record
-- ARGV[1]  consumer group (g1)
-- ARGV[2]  stream entry id
-- ARGV[3]  order id
-- ARGV[4]  user id
-- ARGV[5]  voucher id
-- ARGV[6]  reason
-- ARGV[7]  attempts
-- ARGV[8]  "1" to remove the buyer mark (the user has no order in the
--          database for the voucher), "0" to keep it
-- ARGV[9]  TTL of the order-info key, seconds
-- ARGV[10] "1" to give the unit of stock back, "0" to keep it taken (a
--          sold-out dead letter: the database had no unit for it, so
--          Redis counted one unit too many, and returning it would keep
--          that excess for good)
--
-- Returns 1 when the entry was dead-lettered and given back; 0 when it was
-- no longer pending (another consumer settled it: nothing changes); -1 when
-- the voucher's Redis state is missing or not "ok" (nothing changes: the
-- caller keeps the entry pending and retries after the state is rebuilt,
-- which counts the entry as pending).
if redis.call('HGET', KEYS[5], 'state') ~= 'ok' or redis.call('EXISTS', KEYS[3]) == 0 then
  return -1
end
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('XADD', KEYS[2], '*', 'orderId', ARGV[3], 'userId', ARGV[4], 'voucherId', ARGV[5],
  'reason', ARGV[6], 'attempts', ARGV[7])
if ARGV[10] == '1' then
  redis.call('INCR', KEYS[3])
end
if ARGV[8] == '1' then
  redis.call('SREM', KEYS[4], ARGV[4])
end
redis.call('SET', KEYS[6], ARGV[4] .. ':' .. ARGV[5] .. ':failed', 'EX', ARGV[9])
return 1
