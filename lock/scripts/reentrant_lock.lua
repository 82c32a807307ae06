-- reentrant_lock.lua: Redisson-style re-entrant acquire.
--
-- The lock is a hash: field <owner> -> hold count, plus the field '' (the
-- empty string, never an owner) -> "<token>:<request id>", the fencing token
-- of the current hold and the request id of the last acquire or release
-- applied to it (reentrant_unlock.lua). A hash written before request ids
-- holds the token alone there, which is read as a token with no request.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter, <lock key>:fence (never expires)
-- ARGV[1]  the owner id (non-empty)
-- ARGV[2]  the lease in milliseconds
-- ARGV[3]  the request id: random, one per Obtain. A run whose request id is
--          the last one applied is a retry of that run (the client lost its
--          reply and sent the script again): it counts nothing.
--
-- Returns {1, count, token} when granted: count is 1 on a first grant (a new
-- token is minted with INCR) and grows by one on each re-entry by the same
-- owner (the token stays); a retry returns the current count and token
-- unchanged; the lease is reset to ARGV[2] in every case.
-- Returns {0, pttl} when another owner holds it: pttl is the remaining lease
-- in milliseconds, which bounds how long a waiter sleeps.
if redis.call('EXISTS', KEYS[1]) == 0 then
  local token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], ARGV[1], 1, '', string.format('%d:%s', token, ARGV[3]))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 1, token}
end
local count = redis.call('HGET', KEYS[1], ARGV[1])
if count then
  local meta = redis.call('HGET', KEYS[1], '') or ''
  local token, last = string.match(meta, '^(%d+):(.*)$')
  if not token then
    token = meta
  end
  if last ~= ARGV[3] then
    count = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
    redis.call('HSET', KEYS[1], '', token .. ':' .. ARGV[3])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(count), tonumber(token)}
end
return {0, redis.call('PTTL', KEYS[1])}
