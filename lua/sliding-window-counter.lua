-- Sliding window counter: epoch-aligned windows as in the fixed window, but the previous
-- window's count still weighs in, in proportion to how much of it the sliding window
-- still covers: estimate = previous * (1 - elapsed / window) + current. Two numbers per
-- client and near-exact.
-- State (string): 'index:current:previous', the current window's index and count and the
-- previous window's count (integers). What a check read: the current and previous counts.
local function sliding_window_counter(key, now, limit, window, _, cost, charge, current, previous)
  local index = math.floor(now / window)
  if not current then
    current, previous = 0, 0
    local state = redis.call('GET', key)
    if state then
      local stored, n, p = string.match(state, '^([^:]*):([^:]*):([^:]*)$')
      stored = tonumber(stored)
      if stored == index then
        current, previous = tonumber(n), tonumber(p)
      elseif stored == index - 1 then
        previous = tonumber(n)
      end
    end
  end
  local elapsed = now - index * window
  local weight = 1 - elapsed / window
  local estimate = previous * weight + current
  local to_end = (index + 1) * window - now
  local reset = 0
  if current > 0 then
    reset = to_end + window
  elseif previous > 0 then
    reset = to_end
  end
  if estimate + cost <= limit then
    if not charge then
      return true, limit - estimate, reset, 0, 0, current, previous
    end
    current = current + cost
    redis.call('SET', key, string.format('%d:%d:%d', index, current, previous), 'PX',
      string.format('%d', math.max(math.ceil(to_end + window), ttl_floor, 1)))
    return true, limit - (previous * weight + current), to_end + window, 0, 0
  end
  -- Earliest t with the estimate at now + t low enough: first within this window, as the
  -- previous window's weight fades; else in the next, as the current one's does.
  local retry
  if previous > 0 then
    retry = (previous + current + cost - limit) * window / previous - elapsed
  end
  if not retry or retry >= to_end then
    local into_next = 0
    if current + cost > limit then
      into_next = (current + cost - limit) * window / current
    end
    retry = to_end + into_next
  end
  return false, limit - estimate, reset, retry, 0
end
