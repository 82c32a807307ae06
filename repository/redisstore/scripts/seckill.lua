-- seckill.lua: admit one order in one bucket of a voucher, in one atomic
-- step. Its one caller is repository/redisstore/seckill_script.go; the
-- service's step (service/async/admission.go, AdmitOrder) decides what a
-- reply means. scripts.go, beside it, names the modes and the codes.
--
-- KEYS[1]  seckill:{<tag>}:stock:<voucherId>  the bucket's stock left
-- KEYS[2]  seckill:{<tag>}:order:<voucherId>  the bucket's buyer ids
-- KEYS[3]  seckill:{<tag>}:voucher:<voucherId>  hash {begin, end, initial, state}
-- KEYS[4]  seckill:{<tag>}:orders  the shard's order stream
-- KEYS[5]  seckill:{<tag>}:orderinfo:<orderId>  "<userId>:<voucherId>:<status>" or "void"
-- ARGV[1]  user id; ARGV[2] voucher id; ARGV[3] order id
-- ARGV[4]  now, unix ms; ARGV[5] TTL of the order info, seconds
-- ARGV[6]  mode: "" (one bucket), "reserve" (the user's home bucket),
--          "away" (another bucket: no buyer mark read or added here)
-- ARGV[7]  traceparent for the stream entry ("" or absent: none)
-- ARGV[8]  with "away": the home bucket's shard, stored as buyerShard
--
-- Returns 0 admitted (or admitted already by a run whose reply was lost),
-- 1 sold out, 2 duplicate, 3 not started, 4 ended, 5 not loaded, 6 unsafe,
-- 7 void order id, 8 move ("reserve", no stock: buyer mark reserved, order
-- info "moving"). Nothing changes unless it returns 0 or 8.
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
