-- Fixed window: epoch-aligned windows [k * window, (k + 1) * window), one counter each.
-- Cheap, but a client can spend a full quota at the end of one window and another at the
-- start of the next: up to 2x the limit within a short span around the boundary.
-- State (string): 'index:count', the window index and the cost admitted in it.
local function fixed_window(key, now, limit, window, _, cost, charge)
  local index = math.floor(now / window)
  local count = 0
  local state = redis.call('GET', key)
  if state then
    local stored, n = split(state)
    if stored == index then
      count = n
    end
  end
  local to_end = (index + 1) * window - now
  if count + cost > limit then
    return false, limit - count, count > 0 and to_end or 0, to_end, 0
  end
  if charge then
    count = count + cost
    redis.call('SET', key, string.format('%.17g:%.17g', index, count), 'PX', lifetime(to_end))
  end
  return true, limit - count, count > 0 and to_end or 0, 0, 0
end
