-- buy.lua: take one unit.
--
-- KEYS[1]  stock:<id>
return redis.call('DECR', KEYS[1])
