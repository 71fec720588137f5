-- Token bucket: holds at most `burst` tokens and refills continuously at one token per
-- window/limit ms. A request of cost c passes iff c tokens are present.
-- State (hash): level and ts. The level counts tokens times the window, so refill is
-- elapsed * limit: whole numbers for whole milliseconds, and fractions of a token stay
-- exact instead of drifting through repeated divisions.
algorithms['token-bucket'] = {
  check = function(key, now, p)
    local capacity = p.burst * p.window
    local state = redis.call('HMGET', key, 'level', 'ts')
    local level, ts = capacity, now
    if state[1] then
      -- Never move ts backwards: a pod whose clock runs behind (clock: 'local') would
      -- otherwise make the next pod refill the same interval twice.
      local last = tonumber(state[2])
      ts = math.max(now, last)
      level = math.min(capacity, tonumber(state[1]) + (ts - last) * p.limit)
    end
    local need = p.cost * p.window
    local v = { capacity = capacity, level = level, ts = ts, delay = 0 }
    v.allowed = level >= need
    v.retry = v.allowed and 0 or (need - level) / p.limit
    v.remaining = level / p.window
    v.reset = (capacity - level) / p.limit
    return v
  end,
  commit = function(key, now, p, v)
    local level = v.level - p.cost * p.window
    redis.call('HSET', key, 'level', num(level), 'ts', num(v.ts))
    v.remaining = level / p.window
    v.reset = (v.capacity - level) / p.limit
    expire_after(key, v.reset + (v.ts - now), p.ttl_floor)
  end,
}
