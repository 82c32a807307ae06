-- reentrant_renew.lua: the watchdog's lease renewal.
--
-- KEYS[1]  the lock hash (see reentrant_lock.lua)
-- ARGV[1]  the owner id
-- ARGV[2]  the lease in milliseconds
--
-- Returns 1 when ARGV[1] still holds the lock and its lease was reset to
-- ARGV[2]; 0 when it does not (released or expired): the watchdog stops.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
