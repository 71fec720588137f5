-- Token bucket: holds at most `burst` tokens and refills continuously at one token per
-- window/limit ms. A request of cost c passes iff c tokens are present.
-- State (hash): tokens (fractional, kept exactly) and ts, the time that count was true.
algorithms['token-bucket'] = {
  check = function(key, now, p)
    local interval = p.window / p.limit
    local state = redis.call('HMGET', key, 'tokens', 'ts')
    local tokens, ts = p.burst, now
    if state[1] then
      -- Never move ts backwards: a pod whose clock runs behind (clock: 'local') would
      -- otherwise make the next pod refill the same interval twice.
      local last = tonumber(state[2])
      ts = math.max(now, last)
      tokens = math.min(p.burst, tonumber(state[1]) + (ts - last) / interval)
    end
    local v = { interval = interval, tokens = tokens, ts = ts, delay = 0 }
    v.allowed = tokens >= p.cost
    v.retry = v.allowed and 0 or (p.cost - tokens) * interval
    v.remaining = tokens
    v.reset = (p.burst - tokens) * interval
    return v
  end,
  commit = function(key, now, p, v)
    local tokens = v.tokens - p.cost
    redis.call('HSET', key, 'tokens', num(tokens), 'ts', num(v.ts))
    v.remaining = tokens
    v.reset = (p.burst - tokens) * v.interval
    expire_after(key, v.reset + (v.ts - now), p.ttl_floor)
  end,
}
