-- unlock.lua: compare-and-delete, the safe release.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the owner token the holder obtained the lock with
--
-- Returns 1 when the key held ARGV[1] and was deleted; 0 when it is missing
-- or holds another owner's token (expired, then taken by someone else), in
-- which case nothing changes.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
