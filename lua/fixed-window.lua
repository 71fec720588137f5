-- Fixed window: epoch-aligned windows [k * window, (k + 1) * window), one counter each.
-- Cheap, but a client can spend a full quota at the end of one window and another at the
-- start of the next: up to 2x the limit within a short span around the boundary.
-- State (string): 'index:count', the window index and the cost admitted in it (integers).
-- What a check read: the count in the current window.
-- Expects  common.lua
-- Defines  fixed_window, a step (see prelude.lua)
local function fixed_window(key, now, limit, window, _, cost, charge, count)
  local index = math.floor(now / window)
  if not count then
    local stored, n = read_state(key)
    count = stored == index and n or 0
  end
  local to_end = (index + 1) * window - now
  if count + cost > limit then
    return false, limit - count, count > 0 and to_end or 0, to_end, 0
  end
  if not charge then
    return true, limit - count, count > 0 and to_end or 0, 0, 0, count
  end
  count = count + cost
  redis.call('SET', key, string.format('%d:%d', index, count), 'PX', ttl(to_end))
  return true, limit - count, to_end, 0, 0
end
