-- Fixed window: epoch-aligned windows [k * window, (k + 1) * window), one counter each.
-- Cheap, but a client can spend a full quota at the end of one window and another at the
-- start of the next: up to 2x the limit within a short span around the boundary.
-- State (hash): w (window index) and n (cost admitted in it).
algorithms['fixed-window'] = {
  check = function(key, now, p)
    local index = math.floor(now / p.window)
    local state = redis.call('HMGET', key, 'w', 'n')
    local count = 0
    if state[1] and tonumber(state[1]) == index then
      count = tonumber(state[2])
    end
    local v = { index = index, count = count, window_end = (index + 1) * p.window, delay = 0 }
    v.allowed = count + p.cost <= p.limit
    v.retry = v.allowed and 0 or v.window_end - now
    v.remaining = p.limit - count
    v.reset = count > 0 and v.window_end - now or 0
    return v
  end,
  commit = function(key, now, p, v)
    local count = v.count + p.cost
    redis.call('HSET', key, 'w', num(v.index), 'n', num(count))
    v.remaining = p.limit - count
    v.reset = v.window_end - now
    expire_after(key, v.reset, p.ttl_floor)
  end,
}
