-- seckill_settle.lua: settle an admission whose answer never came (a lost
-- reply, a timeout, a dropped connection): either seckill.lua admitted the
-- order, or it never will.
--
-- KEYS[1]  seckill:{<tag>}:orderinfo:<orderId>  in the admitting bucket's shard
-- ARGV[1]  user id
-- ARGV[2]  voucher id
-- ARGV[3]  TTL of the void mark, seconds
--
-- Returns 0 when the order was admitted: the order-info key names this user
-- and voucher (pending, or failed since); 2 when the run was a home
-- bucket's reservation (the key is "<user>:<voucher>:moving": the caller
-- goes on to the other buckets). Returns 1 when it was not, or is
-- not known here: the key is set to "void" when missing, so that seckill.lua
-- refuses the order id (code 7) if the admission still arrives; a key that is
-- void already or names another order is left as it is. A missing key may
-- also be an order a consumer has written and acknowledged already (which
-- drops the key): the database answers for those.
local v = redis.call('GET', KEYS[1])
if v then
  local mine = ARGV[1] .. ':' .. ARGV[2] .. ':'
  if v == mine .. 'moving' then
    return 2
  end
  if string.sub(v, 1, #mine) == mine then
    return 0
  end
  return 1
end
redis.call('SET', KEYS[1], 'void', 'EX', ARGV[3])
return 1
