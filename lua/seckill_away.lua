-- seckill_away.lua: admit an order in a bucket of a voucher whose stock is
-- split in buckets, other than the user's home bucket. The home bucket's
-- seckill.lua checked the user's buyer mark and reserved it (code 8); this
-- bucket only checks its state, the window and its stock. Atomic.
--
-- KEYS[1]  the bucket's stock      seckill:{<tag>}:stock:<voucherId>
-- KEYS[2]  the bucket's hash       seckill:{<tag>}:voucher:<voucherId>
-- KEYS[3]  the bucket's shard's order stream (group g1)
-- KEYS[4]  seckill:{<tag>}:orderinfo:<orderId> in the bucket's shard
-- ARGV[1]  user id
-- ARGV[2]  voucher id
-- ARGV[3]  order id
-- ARGV[4]  now, unix milliseconds
-- ARGV[5]  TTL of the order-info key, seconds
-- ARGV[6]  the shard of the user's home bucket (the stream entry carries
--          it: a dead letter gives the buyer mark back there)
-- ARGV[7]  the W3C traceparent of the admitting request, stored in the
--          stream entry as field traceparent; absent or "" stores none
--
-- Returns 0 admitted (stock decremented, entry appended with buyerShard,
-- order info pending; or admitted already by an earlier run whose reply was
-- lost), 1 sold out here, 3 not started, 4 ended, 5 not loaded, 6 unsafe,
-- 7 void (as seckill.lua). Nothing changes unless the code is 0.
local mine = ARGV[1] .. ':' .. ARGV[2] .. ':'
local info = redis.call('GET', KEYS[4])
if info then
  if string.sub(info, 1, #mine) == mine then
    return 0
  end
  return 7
end
local h = redis.call('HMGET', KEYS[2], 'state', 'begin', 'end')
if not h[1] then
  return 5
end
if h[1] ~= 'ok' then
  return 6
end
local stock = redis.call('GET', KEYS[1])
if not stock then
  return 5
end
local now = tonumber(ARGV[4])
if now < tonumber(h[2]) then
  return 3
end
if now >= tonumber(h[3]) then
  return 4
end
if tonumber(stock) <= 0 then
  return 1
end
redis.call('DECR', KEYS[1])
local entry = {'orderId', ARGV[3], 'userId', ARGV[1], 'voucherId', ARGV[2], 'buyerShard', ARGV[6]}
if ARGV[7] and ARGV[7] ~= '' then
  entry[#entry + 1] = 'traceparent'
  entry[#entry + 1] = ARGV[7]
end
redis.call('XADD', KEYS[3], '*', unpack(entry))
redis.call('SET', KEYS[4], mine .. 'pending', 'EX', ARGV[5])
return 0
