-- Gives units back to one policy's budget after they were charged, never beyond what its
-- algorithm could hold: a token bucket up to its capacity; a window's count only in the
-- window charged (a later give-back changes nothing: that count no longer limits anything)
-- and down to zero; the sliding log's entries of the charge removed; a leaky bucket's slot
-- freed for what of it is still to come. A key without state is left alone.
-- Composed after a prelude (`now`, `ttl_floor`) and common.lua, before an entry that calls it
-- (lua/lease-return.lua, lua/refund.lua).
-- Expects  num, ttl, read_number (common.lua's)
-- Defines  give_back(key, now, algorithm, limit, window, burst, units, charged) -> the units
--          given back (whole units; the sliding log's entries removed; a leaky bucket's
--          freed slot in units, a fraction), where `charged` says which charge: the window
--          index it was charged in (the windows), its instant (the sliding log: its
--          entries' time; the leaky bucket: when the request's slot began); nil: the latest
--          (this window, the newest entries, the last slot). The token bucket needs none.
local function give_back(key, now, algorithm, limit, window, burst, units, charged)
  if algorithm == 'sliding-window-log' then
    local newest_first = num(charged or now)
    local since = '(' .. num(now - window)
    local removed = 0
    -- Newest first, from the charge's time back: the charge's own entries when `charged` is
    -- its instant. At one time, the highest-numbered go, so that the numbers the step gives
    -- (lua/sliding-window-log.lua: after those already there) stay unique.
    while removed < units do
      local newest = redis.call('ZREVRANGEBYSCORE', key, newest_first, since, 'WITHSCORES',
        'LIMIT', 0, 1)
      if #newest == 0 then
        break
      end
      local stamp = num(tonumber(newest[2]))
      local count = redis.call('ZCOUNT', key, stamp, stamp)
      local members = {}
      for n = count - 1, math.max(0, count - (units - removed)), -1 do
        members[#members + 1] = stamp .. ':' .. n
      end
      removed = removed + redis.call('ZREM', key, unpack(members))
      newest_first = '(' .. stamp
    end
    if removed > 0 then
      local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      if #last > 0 then
        redis.call('PEXPIRE', key, ttl(tonumber(last[2]) + window - now))
      end
    end
    return removed
  end
  if algorithm == 'leaky-bucket' then
    local next_free = read_number(key)
    if not next_free then
      return 0
    end
    local slot = units * (window / limit)
    local ends = charged and charged + slot or next_free
    local ahead = math.min(slot, ends - now)
    if ahead <= 0 then
      return 0
    end
    next_free = math.max(now, next_free - ahead)
    redis.call('SET', key, next_free, 'PX', ttl(next_free - now))
    return ahead / (window / limit)
  end
  local state = redis.call('GET', key)
  if not state then
    -- Expired: a window that ended, or a bucket already full.
    return 0
  end
  local index = now / window
  index = index - index % 1
  local to_end = (index + 1) * window - now
  if algorithm == 'token-bucket' then
    local level, last = string.match(state, '^([^:]*):(.*)$')
    level, last = tonumber(level), tonumber(last)
    local capacity = burst * window
    local ts = math.max(now, last)
    level = math.min(capacity, level + (ts - last) * limit)
    local back = math.min(units * window, capacity - level)
    level = level + back
    redis.call('SET', key, string.format('%.17g:%.17g', level, ts), 'PX',
      ttl((capacity - level) / limit + (ts - now)))
    back = back / window
    return back - back % 1
  end
  if charged and charged ~= index then
    return 0
  end
  if algorithm == 'fixed-window' then
    local n = tonumber(state)
    if n then
      -- The integer form (lua/fixed-window.lua): count * 2^20 + index % 2^20, expiring at the
      -- window's end; DECRBY keeps that expiry.
      local low = n % 1048576
      if low ~= index % 1048576 then
        return 0
      end
      local back = math.min(units, (n - low) / 1048576)
      redis.call('DECRBY', key, back * 1048576)
      return back
    end
    local stored, counted = string.match(state, '^([^:]*):(.*)$')
    if tonumber(stored) ~= index then
      return 0
    end
    local back = math.min(units, tonumber(counted))
    redis.call('SET', key, string.format('%d:%d', index, counted - back), 'PX', ttl(to_end))
    return back
  end
  -- sliding-window-counter: 'index:current:previous'
  local stored, current, previous = string.match(state, '^([^:]*):([^:]*):([^:]*)$')
  if tonumber(stored) ~= index then
    return 0
  end
  local back = math.min(units, tonumber(current))
  redis.call('SET', key, string.format('%d:%d:%d', index, current - back, previous), 'PX',
    ttl(to_end + window))
  return back
end
