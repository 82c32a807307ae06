-- unlock_all.lua: compare-and-delete many locks in one atomic step, each
-- exactly as unlock.lua releases one.
--
-- KEYS[1]    the first lock key; KEYS[i] the i-th
-- ARGV[1]    the owner token the first lock was obtained with; ARGV[i] the
--            i-th lock's
--
-- Returns an array with one integer per key: 1 when the key held its owner
-- token and was deleted; 0 when it is missing or holds another owner's token
-- (expired, then taken by someone else), in which case that key is unchanged.
local out = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    out[i] = redis.call('DEL', KEYS[i])
  else
    out[i] = 0
  end
end
return out
