-- seckill.lua: async-mode admission of one order in one bucket of a
-- voucher, the whole hot path in one atomic step.
--
-- KEYS[1]  seckill:{<tag>}:stock:<voucherId>  the bucket's stock left
-- KEYS[2]  seckill:{<tag>}:order:<voucherId>  the bucket's set of buyer ids
-- KEYS[3]  seckill:{<tag>}:voucher:<voucherId>  hash {begin, end (unix ms), initial, state}
-- KEYS[4]  seckill:{<tag>}:orders  the shard's order stream (group g1)
-- KEYS[5]  seckill:{<tag>}:orderinfo:<orderId>  "<userId>:<voucherId>:<status>",
--          or "void" (seckill_settle.lua gave the order id up)
-- ARGV[1]  user id
-- ARGV[2]  voucher id
-- ARGV[3]  order id (from the ID worker)
-- ARGV[4]  now, unix milliseconds
-- ARGV[5]  TTL of the order-info key, seconds
-- ARGV[6]  the mode: absent or "" for a voucher of one bucket;
--          "reserve" in the user's home bucket of a split voucher (the
--          bucket holding the user's buyer mark): sold out here, the
--          script reserves the buyer mark and answers 8, and the caller
--          tries the other buckets; "away" in one of those other buckets:
--          the home bucket checked the buyer mark, so this one neither
--          reads nor adds it, and the entry carries buyerShard = ARGV[8]
-- ARGV[7]  the W3C traceparent of the admitting request, stored in the
--          stream entry as field traceparent; absent or "" stores none
-- ARGV[8]  with "away": the shard of the user's home bucket (a dead
--          letter gives the buyer mark back there)
--
-- Returns an integer code:
--   0 admitted: stock decremented, buyer added (not "away"), order
--     appended to the stream, order info set to pending; or admitted
--     already: the order-info key names this user and voucher (pending, or
--     failed since), so this run repeats one whose reply was lost, and
--     nothing changes
--   1 sold out            2 duplicate (the user already bought; not "away")
--   3 not started         4 ended
--   5 not loaded (the voucher hash or the stock key is missing)
--   6 unsafe (state is not "ok": Redis lost data, or a reconciler is at work)
--   7 void (the order-info key is "void", or names another order: the order
--     id was given up after an admission whose answer was lost)
--   8 move ("reserve" only): no stock in this bucket; the buyer mark is
--     added and the order info is "<user>:<voucher>:moving" (a repeat of
--     this run answers 8 again); the caller admits the order in another
--     bucket ("away") and then ends the reservation (seckill_release.lua)
-- Nothing changes unless the code is 0 or 8.
local mine = ARGV[1] .. ':' .. ARGV[2] .. ':'
local mode = ARGV[6] or ''
local away = mode == 'away'
local info = redis.call('GET', KEYS[5])
if info then
  if not away and info == mine .. 'moving' then
    return 8
  end
  if string.sub(info, 1, #mine) == mine then
    return 0
  end
  return 7
end
local h = redis.call('HMGET', KEYS[3], 'state', 'begin', 'end')
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
if not away and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return 2
end
if tonumber(stock) <= 0 then
  if mode == 'reserve' then
    redis.call('SADD', KEYS[2], ARGV[1])
    redis.call('SET', KEYS[5], mine .. 'moving', 'EX', ARGV[5])
    return 8
  end
  return 1
end
redis.call('DECR', KEYS[1])
local entry = {'orderId', ARGV[3], 'userId', ARGV[1], 'voucherId', ARGV[2]}
if away then
  entry[#entry + 1] = 'buyerShard'
  entry[#entry + 1] = ARGV[8]
else
  redis.call('SADD', KEYS[2], ARGV[1])
end
if ARGV[7] and ARGV[7] ~= '' then
  entry[#entry + 1] = 'traceparent'
  entry[#entry + 1] = ARGV[7]
end
redis.call('XADD', KEYS[4], '*', unpack(entry))
redis.call('SET', KEYS[5], mine .. 'pending', 'EX', ARGV[5])
return 0
