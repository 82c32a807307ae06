-- acquire_all.lua: obtain many locks at once, each exactly as acquire.lua
-- obtains one, fencing token included, in one atomic step.
--
-- KEYS[1]    the first lock key (a string holding its owner token)
-- KEYS[2]    its fencing counter, <lock key>:fence (never expires)
-- KEYS[2i-1], KEYS[2i]  the same pair for the i-th lock
-- ARGV[1]    the lease in milliseconds, for every lock
-- ARGV[i+1]  the owner token of the i-th lock (random, unique per lock and
--            call)
--
-- Returns an array with one integer per lock, in the order of the pairs:
-- its fencing token (>= 1, one more than the previous grant's) when it was
-- free and is now held by its owner token; 0 when someone else holds it
-- (that key unchanged). Each lock is decided on its own: a refused key does
-- not stop the others. A run that finds a key holding its own owner token is
-- a retry of the run that granted it (the client lost that reply): it
-- answers that grant again with its token, resets the lease and counts
-- nothing. A run that fails part-way (a key of the wrong type) may leave the
-- locks before it granted: the caller then releases its owner tokens with
-- unlock_all.lua.
local ttl = ARGV[1]
local out = {}
for i = 1, #KEYS / 2 do
  local key, fence, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  if redis.call('SET', key, owner, 'NX', 'PX', ttl) then
    out[i] = redis.call('INCR', fence)
  elseif redis.call('GET', key) == owner then
    redis.call('PEXPIRE', key, ttl)
    out[i] = tonumber(redis.call('GET', fence))
  else
    out[i] = 0
  end
end
return out
