-- reentrant_lock.lua: Redisson-style re-entrant acquire.
--
-- The lock is a hash: field <owner> -> hold count, plus the field '' (the
-- empty string, never an owner) -> the fencing token of the current hold.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter, <lock key>:fence (never expires)
-- ARGV[1]  the owner id (non-empty)
-- ARGV[2]  the lease in milliseconds
--
-- Returns {1, count, token} when granted: count is 1 on a first grant (a new
-- token is minted with INCR) and grows by one on each re-entry by the same
-- owner (the token stays); the lease is reset to ARGV[2] either way.
-- Returns {0, pttl} when another owner holds it: pttl is the remaining lease
-- in milliseconds, which bounds how long a waiter sleeps.
if redis.call('EXISTS', KEYS[1]) == 0 then
  local token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], ARGV[1], 1, '', token)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 1, token}
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  local count = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, count, tonumber(redis.call('HGET', KEYS[1], ''))}
end
return {0, redis.call('PTTL', KEYS[1])}
