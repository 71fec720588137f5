-- One increment of @nestjs/throttler's storage (lib/throttler/redis-throttler-storage.ts),
-- with the semantics of throttler's own in-memory ThrottlerStorageService (6.x), which
-- test/throttler/differential.spec.ts holds it to, field for field:
--  * a record per throttler key: when its window ends (`e`, ttl from the first hit of the
--    window), whether it is blocked (`x`) and until when (`b`); shared by every throttler
--    name that uses the key;
--  * per key and name, its hits, each counted until ttl after it was made: a sorted set of
--    hits scored by when they end (KEYS[2]); the record keeps the latest end per name
--    (`m:<name>`) and a sequence for the hits' members (`s`);
--  * a record with no block running, its window over and no hit left is gone (throttler's
--    sweep evicts it): read as absent, whatever Redis still holds.
-- KEYS     the record (a hash), this name's hits (a sorted set); one hash tag
-- ARGV     now (epoch ms; '' reads Redis TIME), ttl (ms), limit, blockDuration (ms), the
--          name's field suffix, ttl floor (ms, for virtual clocks)
-- Reply    totalHits, timeToExpire (s), isBlocked (1 | 0), timeToBlockExpire (s)
local record, hits = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
if not now then
  local time = redis.call('TIME')
  local ms = time[2] / 1000
  now = time[1] * 1000 + ms - ms % 1
end
local ttl, limit, block = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local last_field = 'm:' .. ARGV[5]
local ttl_floor = tonumber(ARGV[6])

local fields = redis.call('HGETALL', record)
local state = {}
for i = 1, #fields, 2 do
  state[fields[i]] = fields[i + 1]
end
local expires = tonumber(state.e)
local blocked = state.x == '1'
local block_ends = tonumber(state.b) or 0
if expires and expires <= now and not (blocked and block_ends > now) then
  local live = false
  for field, value in pairs(state) do
    if string.sub(field, 1, 2) == 'm:' and tonumber(value) > now then
      live = true
      break
    end
  end
  if not live then
    expires = nil
  end
end
if not expires then
  -- A new record: what a gone one held (other names' latest ends) goes with it.
  redis.call('DEL', record)
  state = {}
  expires, blocked, block_ends = now + ttl, false, 0
end
local seq = tonumber(state.s) or 0
local last_hit = tonumber(state[last_field]) or now

-- Hits whose ttl has passed no longer count.
redis.call('ZREMRANGEBYSCORE', hits, '-inf', now)
local count = redis.call('ZCARD', hits)
local function hit()
  seq = seq + 1
  redis.call('ZADD', hits, now + ttl, seq)
  count = count + 1
  last_hit = math.max(last_hit, now + ttl)
end

local function seconds_until(at)
  return math.ceil((at - now) / 1000)
end

local time_to_expire = seconds_until(expires)
if time_to_expire <= 0 then
  expires = now + ttl
  time_to_expire = seconds_until(expires)
end

local total, refused, time_to_block_expire
if block <= 0 then
  -- No block: a hit over the limit is refused and not counted; it waits for the oldest hit.
  -- The record's own block (another name's on this key) is neither read nor changed.
  refused = count >= limit
  if refused then
    total = count + 1
    if count > 0 then
      local oldest = redis.call('ZRANGE', hits, 0, 0, 'WITHSCORES')
      time_to_block_expire = seconds_until(tonumber(oldest[2]))
    else
      time_to_block_expire = time_to_expire
    end
  else
    hit()
    total = count
    time_to_block_expire = 0
  end
else
  if not blocked then
    hit()
    if count > limit then
      blocked, block_ends = true, now + block
    end
  end
  time_to_block_expire = seconds_until(block_ends)
  if time_to_block_expire <= 0 and blocked then
    -- The block is over: this name starts again from this hit.
    blocked = false
    redis.call('DEL', hits)
    count = 0
    last_hit = now
    hit()
  end
  total, refused = count, blocked
end

-- The record lives until it is gone by the rule above; the hits until their last ends.
local gone_at = math.max(expires, last_hit)
for field, value in pairs(state) do
  if string.sub(field, 1, 2) == 'm:' and field ~= last_field then
    gone_at = math.max(gone_at, tonumber(value))
  end
end
if blocked then
  gone_at = math.max(gone_at, block_ends)
end
local function lifetime(at)
  return string.format('%d', math.max(math.ceil(at - now), ttl_floor, 1))
end
redis.call('HSET', record, 'e', expires, 'b', block_ends, 'x', blocked and 1 or 0, 's', seq,
  last_field, last_hit)
redis.call('PEXPIRE', record, lifetime(gone_at))
if count > 0 then
  redis.call('PEXPIRE', hits, lifetime(last_hit))
end
return { total, time_to_expire, refused and 1 or 0, time_to_block_expire }
