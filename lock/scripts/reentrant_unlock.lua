-- reentrant_unlock.lua: Redisson-style re-entrant release.
--
-- KEYS[1]  the lock hash (see reentrant_lock.lua)
-- ARGV[1]  the owner id
-- ARGV[2]  the lease in milliseconds, restored while holds remain
-- ARGV[3]  the release channel of the key, where waiters listen
-- ARGV[4]  the request id: random, one per held Lock (its Release calls
--          share it). A run whose request id is the last one applied is a
--          retry of that run (the client lost its reply): it changes nothing.
--
-- Returns -1 when ARGV[1] holds no count (expired, never held, or a retry
-- of the release that deleted the hash): nothing changes. A retry of a
-- release applied already returns the owner's count unchanged. Otherwise
-- decrements the owner's count and returns what is left: above 0 the lease
-- is reset to ARGV[2] and ARGV[4] is recorded as the last request; at 0 the
-- hash is deleted and 'released' is published on ARGV[3] to wake the
-- waiters.
local count = redis.call('HGET', KEYS[1], ARGV[1])
if not count then
  return -1
end
local meta = redis.call('HGET', KEYS[1], '') or ''
local token, last = string.match(meta, '^(%d+):(.*)$')
if not token then
  token = meta
end
if last == ARGV[4] then
  return tonumber(count)
end
count = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if count > 0 then
  redis.call('HSET', KEYS[1], '', token .. ':' .. ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return count
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], 'released')
return 0
