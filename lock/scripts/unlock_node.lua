#!lua flags=allow-cross-slot-keys
-- unlock_node.lua: unlock_all.lua for the locks of one Redis Cluster node,
-- the keys in ARGV (see acquire_node.lua): compare-and-delete of each.
--
-- KEYS[1]    none
-- ARGV[1]    the first lock key, ARGV[2] its owner token; then
-- ARGV[2i-1] the i-th lock key, ARGV[2i] its owner token
--
-- Returns an array with one integer per lock: 1 when the key held its
-- owner token and was deleted; 0 when it is missing or another owner's.
local out = {}
for i = 1, #ARGV, 2 do
  if redis.call('GET', ARGV[i]) == ARGV[i + 1] then
    out[#out + 1] = redis.call('DEL', ARGV[i])
  else
    out[#out + 1] = 0
  end
end
return out
