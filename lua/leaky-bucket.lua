-- Leaky bucket as a meter: requests leave one per window/limit ms. An admitted request
-- starts at max(now, next) and pushes `next` on by cost * interval; it is admitted iff
-- its wait plus (cost - 1) * interval is below burst * interval, so at most `burst`
-- requests are waiting or starting at once. The caller waits `delay` before proceeding.
-- State (string): next, the time the queue is free again.
algorithms['leaky-bucket'] = {
  check = function(key, now, p)
    local interval = p.window / p.limit
    local next_free = tonumber(redis.call('GET', key) or '0')
    local start = math.max(now, next_free)
    local wait = start - now
    local v = { interval = interval, start = start }
    v.allowed = wait + (p.cost - 1) * interval < p.burst * interval
    v.delay = v.allowed and wait or 0
    -- Admission is strict (below burst * interval), so the boundary instant itself still
    -- fails: the retry is the first whole millisecond after it.
    v.retry = v.allowed and 0 or math.floor(wait - (p.burst - p.cost + 1) * interval) + 1
    v.remaining = math.ceil(p.burst - wait / interval)
    v.reset = wait
    return v
  end,
  commit = function(key, now, p, v)
    local next_free = v.start + p.cost * v.interval
    redis.call('SET', key, num(next_free))
    local backlog = next_free - now
    v.remaining = math.ceil(p.burst - backlog / v.interval)
    v.reset = backlog
    expire_after(key, backlog, p.ttl_floor)
  end,
}
