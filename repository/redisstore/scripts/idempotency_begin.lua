-- idempotency_begin.lua: claim an Idempotency-Key for a request, or read
-- what the key already holds, in one atomic step. The user's live keys are
-- counted against a cap.
--
-- KEYS[1]  seckill:idem:{<userId>}:<keyHash>  the key's record (a hash:
--          owner, fp while in flight; fp, status, body once answered)
-- KEYS[2]  seckill:idem:{<userId>}  the user's live keys: a sorted set of
--          key hashes, each scored by when its record expires (Unix ms)
-- ARGV[1]  the owner token of this attempt
-- ARGV[2]  the request's fingerprint (method, route and parsed ids)
-- ARGV[3]  the lease of an attempt in flight, in milliseconds
-- ARGV[4]  the key's hash, its member in KEYS[2]
-- ARGV[5]  the most live keys a user may hold
--
-- Returns false (nil) when the key was free: it is now in flight with
-- ARGV[1] for ARGV[3] ms. A number when the key was free but the user
-- holds ARGV[5] live keys already: the ms until the first of them expires
-- (nothing changes). Otherwise the record as {fp, status, body}: status and
-- body false while the first attempt is in flight.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HMGET', KEYS[1], 'fp', 'status', 'body')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return math.max(tonumber(first[2]) - now, 1)
end
local lease = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fp', ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease)
redis.call('ZADD', KEYS[2], now + lease, ARGV[4])
if redis.call('PTTL', KEYS[2]) < lease then
  redis.call('PEXPIRE', KEYS[2], lease)
end
return false
