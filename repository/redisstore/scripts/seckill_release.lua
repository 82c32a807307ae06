-- seckill_release.lua: end the reservation seckill.lua made in the user's
-- home bucket (code 8) once the other buckets have answered.
--
-- KEYS[1]  seckill:{<tag>}:order:<voucherId>  the home bucket's buyers
-- KEYS[2]  seckill:{<tag>}:orderinfo:<orderId>  in the home bucket's shard
-- ARGV[1]  user id
-- ARGV[2]  voucher id
-- ARGV[3]  "moved": another bucket admitted the order (the buyer mark
--          stays: it is the order's); "void": no bucket did (the buyer
--          mark goes, the order id is void)
-- ARGV[4]  TTL of the void mark, seconds
--
-- Returns 1 when it ended the reservation, 0 when there was none (the
-- order info is not "<user>:<voucher>:moving": ended already). Safe to
-- repeat.
if redis.call('GET', KEYS[2]) ~= ARGV[1] .. ':' .. ARGV[2] .. ':moving' then
  return 0
end
if ARGV[3] == 'moved' then
  redis.call('DEL', KEYS[2])
  return 1
end
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], 'void', 'EX', ARGV[4])
return 1
