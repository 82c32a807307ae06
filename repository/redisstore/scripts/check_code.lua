-- check_code.lua: compare a login code with the stored one in one step,
-- counting wrong guesses.
--
-- KEYS[1]  login:code:<phone>  "<code>:<wrong guesses>", or a plain code
-- ARGV[1]  the code the user sent
-- ARGV[2]  the wrong guesses that delete the code
--
-- Returns 1 on a match, which deletes the code; -n on the n-th wrong guess,
-- deleting the code at the ARGV[2]-th; 0 when there is no code.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local want, wrong = string.match(v, '^([^:]*):?(%d*)$')
if want == nil then return 0 end
if want == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
wrong = (tonumber(wrong) or 0) + 1
if wrong >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], want .. ':' .. wrong, 'KEEPTTL')
end
return -wrong
