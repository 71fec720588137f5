-- Sliding window counter: epoch-aligned windows as in the fixed window, but the previous
-- window's count still weighs in, in proportion to how much of it the sliding window
-- still covers: estimate = previous * (1 - elapsed / window) + current. Two numbers per
-- client and near-exact.
-- State (string): 'index:current:previous', the current window's index and count and the
-- previous window's count (integers). What a check read: the current and previous counts.
-- Expects  common.lua
-- Defines  sliding_window_counter, a step (see prelude.lua)
local function sliding_window_counter(key, now, limit, window, _, cost, charge, current, previous)
  local index = now / window
  index = index - index % 1
  if not current then
    current, previous = 0, 0
    local stored, n, p = read_state(key)
    if stored == index then
      current, previous = n, p
    elseif stored == index - 1 then
      previous = n
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
      ttl(to_end + window))
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
