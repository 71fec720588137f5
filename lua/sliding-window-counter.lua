-- Sliding window counter: epoch-aligned windows as in the fixed window, but the previous
-- window's count still weighs in, in proportion to how much of it the sliding window
-- still covers: estimate = previous * (1 - elapsed / window) + current. Two numbers per
-- client and near-exact.
-- State (hash): w (current window index), n (its count), p (the previous window's count).
algorithms['sliding-window-counter'] = {
  check = function(key, now, p)
    local index = math.floor(now / p.window)
    local state = redis.call('HMGET', key, 'w', 'n', 'p')
    local previous, current = 0, 0
    if state[1] then
      local stored = tonumber(state[1])
      if stored == index then
        current, previous = tonumber(state[2]), tonumber(state[3])
      elseif stored == index - 1 then
        previous = tonumber(state[2])
      end
    end
    local elapsed = now - index * p.window
    local weight = 1 - elapsed / p.window
    local estimate = previous * weight + current
    local to_end = (index + 1) * p.window - now
    local v = { index = index, previous = previous, current = current, weight = weight, delay = 0 }
    v.allowed = estimate + p.cost <= p.limit
    v.retry = 0
    if not v.allowed then
      -- Earliest t with the estimate at now + t low enough: first within this window, as
      -- the previous window's weight fades; else in the next, as the current one's does.
      local within = nil
      if previous > 0 then
        within = (previous + current + p.cost - p.limit) * p.window / previous - elapsed
      end
      if within and within < to_end then
        v.retry = within
      else
        local into_next = 0
        if current + p.cost > p.limit then
          into_next = (current + p.cost - p.limit) * p.window / current
        end
        v.retry = to_end + into_next
      end
    end
    v.remaining = p.limit - estimate
    if current > 0 then
      v.reset = to_end + p.window
    elseif previous > 0 then
      v.reset = to_end
    else
      v.reset = 0
    end
    return v
  end,
  commit = function(key, now, p, v)
    local current = v.current + p.cost
    redis.call('HSET', key, 'w', num(v.index), 'n', num(current), 'p', num(v.previous))
    v.remaining = p.limit - (v.previous * v.weight + current)
    v.reset = (v.index + 2) * p.window - now
    expire_after(key, v.reset, p.ttl_floor)
  end,
}
