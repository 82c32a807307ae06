-- acquire.lua: obtain a lock and mint its fencing token in one atomic step.
--
-- KEYS[1]  the lock key (a string holding the owner token)
-- KEYS[2]  the fencing counter, <lock key>:fence (never expires)
-- ARGV[1]  the owner token (random, unique per holder)
-- ARGV[2]  the lease in milliseconds
--
-- Returns the fencing token (an integer >= 1, one more than the previous
-- grant's) when the lock was free and is now held by ARGV[1]; 0 when someone
-- holds it (nothing changes).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
