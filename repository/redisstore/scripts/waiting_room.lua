-- waiting_room.lua: one step of a voucher's waiting room (docs/waiting-room.md):
-- create and draw the room, lapse expired admissions, do the operation,
-- advance the serving number, answer.
--
-- KEYS[1]  seckill:{<tag>}:room:<voucherId>  hash: seed, drawn, pool, base, serving, counters, back, backat, state
-- KEYS[2]  seckill:{<tag>}:roompool:<voucherId>  zset: joiners before the start, by draw key
-- KEYS[3]  seckill:{<tag>}:roomline:<voucherId>  zset: joiners after the start, by arrival
-- KEYS[4]  seckill:{<tag>}:roomadm:<voucherId>  zset: admitted, not bought, by expiry (ms)
-- KEYS[5]  seckill:{<tag>}:roomdone:<voucherId>  hash: user -> p (bought) or l (lapsed)
-- ARGV[1]  operation: join, joins, poll, bought, soldout, returned, close or audit
-- ARGV[2]  user id (0 for joins, soldout, returned, close and audit)
-- ARGV[3]  the sale's start, Unix ms
-- ARGV[4]  when the keys expire, Unix ms
-- ARGV[5]  admission TTL, ms
-- ARGV[6]  overbooking factor (at least 1)
-- ARGV[7]  a fresh random seed, used when the room is created
-- ARGV[8]  the database's stock now, or "" when the caller has not read it
-- ARGV[9]  returned: the units given back (cancelled or expired orders)
-- ARGV[10] soldout: how long the purchase that met SOLD_OUT took, ms
-- ARGV[11..] joins: the users who join in this call (ARGV[2] is unused)
--
-- Returns, for join and poll, {status, position, ahead, expires, now, new};
-- for joins, a list of such answers, one per user of ARGV[11..] in order;
-- status waiting, admitted, sold_out, closed or notjoined; position -1
-- before the draw; expires the admission's expiry (ms) when admitted; new
-- 1 when this call put the user in the room, else 0.
-- For audit, {joined, admitted, purchased, lapsed, seed, serving, pool,
-- base, state, outstanding, drawn, back}. Every operation returns {"needbase"}
-- when the room must be drawn and ARGV[8] is empty (the caller reads the
-- stock and calls again); bought, soldout, returned, close and audit
-- return {"none"} when there is no room, the others {state}.
--
-- The room's fields are read once per call (one HMGET), its keys' expiry
-- set once per call that writes: a call of joins pays them once for all
-- its users. A new joiner costs one ZADD NX into the pool before the draw;
-- after it a ZSCORE of the pool and one ZADD NX into the line, scored by
-- arrival 1, 2, 3... (nobody leaves the line: the score is the rank + 1).
--
-- The room counts units: remaining = base - purchased + back. A unit given
-- back raises it and reopens a sold-out room; a sell-out, by the count or
-- by a purchase that met SOLD_OUT, sets base so that remaining is 0.
local room, pool, line, adm, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, user = ARGV[1], ARGV[2]
local begin, expireAt, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local overbook = tonumber(ARGV[6])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local changed = op ~= 'poll' and op ~= 'audit'
local joining = op == 'join' or op == 'joins'
-- made: this call created or drew the room (every key gets its expiry).
local made = false

-- The room's fields, read once. A room is created with its seed.
local h = redis.call('HMGET', room, 'seed', 'drawn', 'state', 'pool', 'serving', 'base', 'purchased', 'back', 'lapsed')
if not h[1] then
  if not joining and op ~= 'poll' then
    return {'none'}
  end
  redis.call('HSET', room, 'seed', ARGV[7], 'serving', 0, 'joined', 0,
    'admitted', 0, 'purchased', 0, 'lapsed', 0, 'back', 0, 'state', '')
  h = {ARGV[7], false, '', false, '0', false, '0', '0', '0'}
  changed, made = true, true
end
local seed, drawn, state = h[1], h[2], h[3]
local poolSize = tonumber(h[4] or '0')
local serving = tonumber(h[5])
local base, purchased = tonumber(h[6] or '0'), tonumber(h[7])
local back, lapsed = tonumber(h[8] or '0'), tonumber(h[9])
if not drawn and now >= begin then
  if ARGV[8] == '' then
    return {'needbase'}
  end
  drawn = tostring(now)
  changed, made = true, true
  poolSize = redis.call('ZCARD', pool)
  base = tonumber(ARGV[8])
  redis.call('HSET', room, 'drawn', drawn, 'pool', poolSize, 'base', ARGV[8])
end

-- soldOut marks the room sold out with nothing remaining by its count, so
-- that the next unit given back reopens it with one unit.
local function soldOut()
  state = 'sold_out'
  base = purchased - back
  redis.call('HSET', room, 'state', state, 'base', base)
end

-- Admissions past their expiry lapse; their slots pass on below. Once
-- the room is sold out or closed, the admissions left are not no-shows:
-- they stay as they are. Before the draw nobody is admitted.
local gone = {}
if state == '' and drawn then
  gone = redis.call('ZRANGEBYSCORE', adm, '-inf', now)
end
if #gone > 0 then
  for _, u in ipairs(gone) do
    redis.call('HSET', done, u, 'l')
  end
  redis.call('ZREMRANGEBYSCORE', adm, '-inf', now)
  lapsed = lapsed + #gone
  redis.call('HINCRBY', room, 'lapsed', #gone)
end

-- users are who join in this call; fresh[u] is the line's score of a user
-- this call added to the line, true for one it added to the pool.
local users, fresh = {user}, {}
if op == 'joins' then
  users = {}
  for i = 11, #ARGV do
    users[#users + 1] = ARGV[i]
  end
end
local lineSize = false

if op == 'bought' then
  local was = redis.call('HGET', done, user)
  if was ~= 'p' then
    if redis.call('ZREM', adm, user) == 0 and was == 'l' then
      lapsed = lapsed - 1
      redis.call('HINCRBY', room, 'lapsed', -1)
    end
    redis.call('HSET', done, user, 'p')
    purchased = purchased + 1
    redis.call('HINCRBY', room, 'purchased', 1)
  end
elseif op == 'soldout' and state == '' then
  -- A purchase that read the stock before a unit came back must not
  -- close the room on it: a give-back within its run (plus 2 s for the
  -- instances' sold-out flags) keeps the room open.
  local since = now - tonumber(ARGV[10]) - 2000
  if tonumber(redis.call('HGET', room, 'backat') or '0') < since then
    soldOut()
  end
elseif op == 'returned' and drawn and state ~= 'closed' then
  back = back + tonumber(ARGV[9])
  redis.call('HINCRBY', room, 'back', tonumber(ARGV[9]))
  redis.call('HSET', room, 'backat', now)
  if state == 'sold_out' then
    -- Reopen. The admissions that expired while it was sold out are not
    -- no-shows: they leave without being counted.
    for _, u in ipairs(redis.call('ZRANGEBYSCORE', adm, '-inf', now)) do
      redis.call('HSET', done, u, 'l')
    end
    redis.call('ZREMRANGEBYSCORE', adm, '-inf', now)
    state = ''
    redis.call('HSET', room, 'state', state)
  end
elseif op == 'close' and state ~= 'closed' then
  state = 'closed'
  redis.call('HSET', room, 'state', state)
elseif joining and state == '' then
  -- A user already in the pool or the line keeps the place. Before the
  -- draw the line is empty; after it the pool is frozen, and empty when
  -- its size at the draw was 0.
  local added = 0
  if drawn then
    lineSize = redis.call('ZCARD', line)
    for _, u in ipairs(users) do
      if fresh[u] == nil and (poolSize == 0 or not redis.call('ZSCORE', pool, u))
          and redis.call('ZADD', line, 'NX', lineSize + 1, u) == 1 then
        lineSize = lineSize + 1
        fresh[u] = lineSize
        added = added + 1
      end
    end
  else
    for _, u in ipairs(users) do
      local key = tonumber(string.sub(redis.sha1hex(seed .. ':' .. u), 1, 13), 16)
      if fresh[u] == nil and redis.call('ZADD', pool, 'NX', key, u) == 1 then
        fresh[u] = true
        added = added + 1
      end
    end
  end
  if added > 0 then
    redis.call('HINCRBY', room, 'joined', added)
  end
end

-- The serving number advances while the admitted who have not bought
-- fit in the remaining stock times the factor.
if drawn and state == '' then
  local remaining = base - purchased + back
  if remaining <= 0 then
    soldOut()
    changed = true
  else
    local ended = purchased + lapsed
    local factor = overbook
    if ended >= 20 and purchased > 0 and ended / purchased < factor then
      factor = math.max(ended / purchased, 1)
    end
    local cap = math.floor(remaining * factor)
    local total = poolSize + (lineSize or redis.call('ZCARD', line))
    local k = math.min(cap - redis.call('ZCARD', adm), total - serving, 1000)
    if k > 0 then
      local members = {}
      if serving < poolSize then
        members = redis.call('ZRANGE', pool, serving, math.min(serving + k, poolSize) - 1)
      end
      if serving + k > poolSize then
        local more = redis.call('ZRANGE', line, math.max(serving, poolSize) - poolSize, serving + k - 1 - poolSize)
        for _, m in ipairs(more) do
          members[#members + 1] = m
        end
      end
      local args = {}
      for _, m in ipairs(members) do
        args[#args + 1] = now + ttl
        args[#args + 1] = m
      end
      if #args > 0 then
        redis.call('ZADD', adm, unpack(args))
      end
      changed = true
      serving = serving + #members
      redis.call('HSET', room, 'serving', serving)
      redis.call('HINCRBY', room, 'admitted', #members)
    end
  end
end
-- The keys' expiry: a call of joins that only added users gives it to the
-- keys it wrote (the room, the pool or the line, the admitted); every
-- other call that writes, to all five.
if joining and not made and #gone == 0 then
  redis.call('PEXPIREAT', room, expireAt)
  if drawn then
    redis.call('PEXPIREAT', line, expireAt)
    redis.call('PEXPIREAT', adm, expireAt)
  else
    redis.call('PEXPIREAT', pool, expireAt)
  end
elseif changed or #gone > 0 then
  for _, k in ipairs(KEYS) do
    redis.call('PEXPIREAT', k, expireAt)
  end
end

if op == 'audit' then
  local a = redis.call('HMGET', room, 'joined', 'admitted', 'purchased', 'lapsed', 'seed', 'serving', 'pool', 'base', 'back')
  return {a[1], a[2], a[3], a[4], a[5], a[6], a[7] or '0', a[8] or '', state, redis.call('ZCARD', adm), drawn or '', a[9] or '0'}
end
if not joining and op ~= 'poll' then
  return {state}
end

-- answer is the user's state. A user this call added needs no lookup: the
-- pool's are waiting for the draw; the line's place is the pool's size
-- plus the score, admitted in this call when the serving number reached it.
local function answer(u)
  local f = fresh[u]
  if f == true then
    return {'waiting', -1, -1, 0, now, 1}
  elseif f then
    local pos = poolSize + f
    if state ~= '' then
      return {state, pos, 0, 0, now, 1}
    elseif pos <= serving then
      return {'admitted', pos, 0, now + ttl, now, 1}
    end
    return {'waiting', pos, pos - serving - 1, 0, now, 1}
  end
  local pos = -1
  local rank = redis.call('ZRANK', pool, u)
  if rank then
    if drawn then
      pos = rank + 1
    end
  else
    rank = redis.call('ZRANK', line, u)
    if not rank then
      if state ~= '' then
        return {state, -1, -1, 0, now, 0}
      end
      return {'notjoined', -1, -1, 0, now, 0}
    end
    pos = poolSize + rank + 1
  end
  if state ~= '' then
    return {state, pos, 0, 0, now, 0}
  end
  if redis.call('HEXISTS', done, u) == 1 then
    return {'closed', pos, 0, 0, now, 0}
  end
  local expires = redis.call('ZSCORE', adm, u)
  if expires then
    return {'admitted', pos, 0, tonumber(expires), now, 0}
  end
  if pos == -1 then
    return {'waiting', -1, -1, 0, now, 0}
  end
  return {'waiting', pos, pos - serving - 1, 0, now, 0}
end

if op ~= 'joins' then
  return answer(user)
end
-- A user twice in one call is new once: the first time.
local out, told = {}, {}
for i, u in ipairs(users) do
  out[i] = answer(u)
  if told[u] then
    out[i][6] = 0
  end
  told[u] = true
end
return out
