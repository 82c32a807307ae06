-- reentrant_unlock.lua: Redisson-style re-entrant release.
--
-- KEYS[1]  the lock hash (see reentrant_lock.lua)
-- ARGV[1]  the owner id
-- ARGV[2]  the lease in milliseconds, restored while holds remain
-- ARGV[3]  the release channel of the key, where waiters listen
--
-- Returns -1 when ARGV[1] holds no count (expired, or never held): nothing
-- changes. Otherwise decrements the owner's count and returns what is left:
-- above 0 the lease is reset to ARGV[2]; at 0 the hash is deleted and
-- 'released' is published on ARGV[3] to wake the waiters.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local count = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if count > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return count
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], 'released')
return 0
