-- live_history.lua: add one publication's answers of a voucher to its
-- per-second history, the live dashboard's curve kept after the sale. The
-- hash maps a Unix second to the answers of that second by code, summed
-- over every instance: "<n1>,<n2>,..." in the order of ARGV[4..]
-- (model.LiveCodes). A second not in the hash yet is added only while it
-- holds fewer than ARGV[2] fields; past that bound the answers are added
-- to the field "dropped" instead. Every call sets the TTL anew.
--
-- KEYS[1]    seckill:live:<voucherId>:history
-- ARGV[1]    the second (Unix seconds)
-- ARGV[2]    the most fields the hash holds (seconds, and "dropped")
-- ARGV[3]    TTL in milliseconds
-- ARGV[4..]  the publication's answers by code
--
-- Returns 1 when the second was recorded, 0 when its answers were dropped.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local recorded = 1
if not cur and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  local n = 0
  for i = 4, #ARGV do
    n = n + tonumber(ARGV[i])
  end
  redis.call('HINCRBY', KEYS[1], 'dropped', n)
  recorded = 0
else
  local old = {}
  if cur then
    for v in string.gmatch(cur, '[^,]+') do
      old[#old + 1] = tonumber(v)
    end
  end
  local out = {}
  for i = 4, #ARGV do
    out[#out + 1] = string.format('%d', (old[i - 3] or 0) + tonumber(ARGV[i]))
  end
  redis.call('HSET', KEYS[1], ARGV[1], table.concat(out, ','))
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return recorded
