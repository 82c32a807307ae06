#!lua flags=allow-cross-slot-keys
-- acquire_node.lua: acquire_all.lua for the locks of one Redis Cluster
-- node, whose keys lie in many slots: each lock exactly as acquire.lua
-- obtains one, fencing token included, in one atomic step. Redis Cluster
-- lets a script name the keys of one slot only, so the lock keys come in
-- ARGV, and the flag above lets the script touch keys of several slots of
-- its own node (a key of another node is an error: the caller then takes
-- those locks one by one).
--
-- KEYS[1]    none
-- ARGV[1]    the lease in milliseconds, for every lock
-- ARGV[2i]   the i-th lock key; its fencing counter is {<key>}:fence
-- ARGV[2i+1] the owner token of the i-th lock
--
-- Returns an array with one integer per lock, as acquire_all.lua: its
-- fencing token (>= 1) when granted, or granted before to the same owner
-- token (a retry); 0 when someone else holds it.
local ttl = ARGV[1]
local out = {}
for i = 2, #ARGV, 2 do
  local key, owner = ARGV[i], ARGV[i + 1]
  local fence = '{' .. key .. '}:fence'
  if redis.call('SET', key, owner, 'NX', 'PX', ttl) then
    out[#out + 1] = redis.call('INCR', fence)
  elseif redis.call('GET', key) == owner then
    redis.call('PEXPIRE', key, ttl)
    out[#out + 1] = tonumber(redis.call('GET', fence))
  else
    out[#out + 1] = 0
  end
end
return out
