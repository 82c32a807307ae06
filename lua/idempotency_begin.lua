-- idempotency_begin.lua: claim an Idempotency-Key for a request, or read
-- what the key already holds, in one atomic step.
--
-- KEYS[1]  seckill:idem:<userId>:<key>  the key's record (a hash: owner,
--          fp, and once answered status, body)
-- ARGV[1]  the owner token of this attempt
-- ARGV[2]  the request's fingerprint (method and path)
-- ARGV[3]  the lease of an attempt in flight, in milliseconds
--
-- Returns false (nil) when the key was free: it is now in flight with
-- ARGV[1] for ARGV[3] ms. Otherwise the record as {fp, status, body}:
-- status and body false while the first attempt is in flight.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fp', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return false
end
return redis.call('HMGET', KEYS[1], 'fp', 'status', 'body')
