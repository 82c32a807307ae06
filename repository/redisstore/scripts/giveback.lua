-- giveback.lua: put a cancelled order's unit back into one bucket's stock,
-- at most once per order id, however often it runs.
--
-- KEYS[1]  seckill:{<tag>}:stock:<voucherId>  the bucket's stock
-- KEYS[2]  seckill:{<tag>}:returned:<voucherId>  the bucket's returned orders
-- ARGV[1]  order id
--
-- Returns 1 when it added the unit (and the order to the returned set), 0
-- when the order was in the returned set already (given back before, or
-- counted as on sale by a rebuild), -1 when the stock key is missing
-- (Redis lost the voucher: nothing changes; the rebuild restores it).
-- The returned set expires with the stock.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('INCRBY', KEYS[1], 1)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
