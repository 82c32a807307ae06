-- idempotency_finish.lua: store the answer of the attempt holding an
-- Idempotency-Key, or give the key up, only while that attempt holds it.
--
-- KEYS[1]  seckill:idem:{<userId>}:<keyHash>  the key's record (idempotency_begin.lua)
-- KEYS[2]  seckill:idem:{<userId>}  the user's live keys (idempotency_begin.lua)
-- ARGV[1]  the owner token the attempt claimed the key with
-- ARGV[2]  the answer's HTTP status, or "" to give the key up (delete)
-- ARGV[3]  the answer's body
-- ARGV[4]  how long the answer is kept, in milliseconds
-- ARGV[5]  the key's hash, its member in KEYS[2]
--
-- Returns 1 when done; 0 when the record is missing or another attempt
-- holds it (the lease ran out), in which case nothing changes.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('ZREM', KEYS[2], ARGV[5])
  return redis.call('DEL', KEYS[1])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
redis.call('HDEL', KEYS[1], 'owner')
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'body', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[5])
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
