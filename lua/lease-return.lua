-- Gives back units a pod leased and did not use, while they are still the budget's: a
-- window's only within the window they were charged in (later, that window's count no
-- longer limits anything, and neither does the lease), a bucket's into the bucket, which
-- they never fill past its capacity. A script of its own, sent when an app closes (and when
-- a pod drops a holding it cannot keep): it holds every leasable algorithm's state reading.
-- KEYS     the policy's key
-- ARGV     now (epoch ms; '' reads Redis TIME), ttl floor (ms), algorithm, limit, window (ms),
--          burst, units, the units' window index
-- Reply    how many units went back
local now = tonumber(ARGV[1])
if not now then
  local time = redis.call('TIME')
  local ms = time[2] / 1000
  now = time[1] * 1000 + ms - ms % 1
end
local ttl_floor = ARGV[2] + 0
local algorithm, limit, window = ARGV[3], ARGV[4] + 0, ARGV[5] + 0
local burst, units, held_window = ARGV[6] + 0, ARGV[7] + 0, ARGV[8] + 0
local key = KEYS[1]
local state = redis.call('GET', key)
if not state then
  -- Expired: a window that ended, or a bucket already full.
  return 0
end
local function expiry(ms)
  return string.format('%d', math.max(math.ceil(ms), ttl_floor, 1))
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
    expiry((capacity - level) / limit + (ts - now)))
  back = back / window
  return back - back % 1
end
if held_window ~= index then
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
  redis.call('SET', key, string.format('%d:%d', index, counted - back), 'PX', expiry(to_end))
  return back
end
-- sliding-window-counter: 'index:current:previous'
local stored, current, previous = string.match(state, '^([^:]*):([^:]*):([^:]*)$')
if tonumber(stored) ~= index then
  return 0
end
local back = math.min(units, tonumber(current))
redis.call('SET', key, string.format('%d:%d:%d', index, current - back, previous), 'PX',
  expiry(to_end + window))
return back
