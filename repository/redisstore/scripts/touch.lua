-- touch.lua: a consumer keeps some pending entries of an order stream in
-- memory to retry them; before each retry (and while it backs off) it
-- resets their idle time so that no other consumer takes them for a dead
-- consumer's, but only for the entries still pending with it. An entry
-- another consumer claimed meanwhile stays with that consumer (XCLAIM with
-- min-idle 0 would take it back), and one settled meanwhile (acknowledged:
-- written or dead-lettered) is not pending any more. Check and reset are
-- one atomic step: no claim can come between them.
--
-- KEYS[1]    seckill:{<tag>}:orders  the shard's order stream
-- ARGV[1]    consumer group (g1)
-- ARGV[2]    consumer name
-- ARGV[3..]  stream entry ids
--
-- Returns the ids still pending with the consumer, their idle time reset
-- (XCLAIM ... JUSTID, which counts no delivery). The consumer drops the
-- other entries from memory and never writes them.
local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    args[#args + 1] = ARGV[i]
  end
end
if #args == 5 then
  return {}
end
args[#args + 1] = 'JUSTID'
return redis.call(unpack(args))
