-- acquire.lua: obtain a lock and mint its fencing token in one atomic step.
--
-- KEYS[1]  the lock key (a string holding the owner token)
-- KEYS[2]  the fencing counter, <lock key>:fence (never expires)
-- ARGV[1]  the owner token (random, unique per Obtain)
-- ARGV[2]  the lease in milliseconds
--
-- Returns the fencing token (an integer >= 1, one more than the previous
-- grant's) when the lock was free and is now held by ARGV[1]; 0 when someone
-- else holds it (nothing changes).
-- A run that finds the key holding ARGV[1] itself is a retry of the run that
-- granted it (the client lost that reply and sent the script again; owner
-- tokens are never reused): it answers that grant again, with its token (the
-- counter's current value: nobody else is granted while the key is held),
-- resets the lease to ARGV[2] and counts nothing.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(redis.call('GET', KEYS[2]))
end
return 0
