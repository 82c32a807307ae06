-- idempotency_finish.lua: store the answer of the attempt holding an
-- Idempotency-Key, or give the key up, only while that attempt holds it.
--
-- KEYS[1]  seckill:idem:<userId>:<key>  the key's record (idempotency_begin.lua)
-- ARGV[1]  the owner token the attempt claimed the key with
-- ARGV[2]  the answer's HTTP status, or "" to give the key up (delete)
-- ARGV[3]  the answer's body
-- ARGV[4]  how long the answer is kept, in milliseconds
--
-- Returns 1 when done; 0 when the record is missing or another attempt
-- holds it (the lease ran out), in which case nothing changes.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  return redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'body', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
