-- Sliding window log: exact. One sorted-set entry (scored by its time) per unit of cost
-- admitted in (now - window, now]; denied requests store nothing, and the set never holds
-- more than `limit` entries.
-- What a check read: the count of entries in the window and the reset they make.
-- Expects  common.lua
-- Defines  sliding_window_log, a step (see prelude.lua)
local function sliding_window_log(key, now, limit, window, _, cost, charge, count, reset)
  local since = '(' .. num(now - window)
  if not count then
    reset = 0
    count = redis.call('ZCOUNT', key, since, '+inf')
    if count > 0 then
      local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      reset = tonumber(newest[2]) + window - now
    end
  end
  if count + cost > limit then
    -- The request fits once the oldest (count + cost - limit) entries have aged out.
    local blocking = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT',
      count + cost - limit - 1, 1)
    return false, limit - count, reset, tonumber(blocking[2]) + window - now, 0
  end
  if not charge then
    return true, limit - count, reset, 0, 0, count, reset
  end
  local stamp = num(now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now - window))
  -- Members must be unique even within one millisecond: number them after the entries
  -- already stamped with this time.
  local first = redis.call('ZCOUNT', key, stamp, stamp)
  local entries = {}
  for i = 0, cost - 1 do
    entries[#entries + 1] = stamp
    entries[#entries + 1] = stamp .. ':' .. (first + i)
    -- unpack() is bounded by Lua's stack: add in batches.
    if #entries == 1000 or i == cost - 1 then
      redis.call('ZADD', key, unpack(entries))
      entries = {}
    end
  end
  -- Only a lowered limit can leave more entries than it allows; keep the newest.
  redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))
  reset = math.max(reset, window)
  redis.call('PEXPIRE', key, ttl(reset))
  return true, limit - (count + cost), reset, 0, 0
end
