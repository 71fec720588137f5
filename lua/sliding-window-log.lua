-- Sliding window log: exact. One sorted-set entry (scored by its time) per unit of cost
-- admitted in (now - window, now]; denied requests store nothing, and the set never holds
-- more than `limit` entries.
algorithms['sliding-window-log'] = {
  check = function(key, now, p)
    local since = '(' .. num(now - p.window)
    local count = redis.call('ZCOUNT', key, since, '+inf')
    local v = { count = count, delay = 0 }
    v.allowed = count + p.cost <= p.limit
    v.retry = 0
    if not v.allowed then
      -- The request fits once the oldest (count + cost - limit) entries have aged out.
      local blocking = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT',
        count + p.cost - p.limit - 1, 1)
      v.retry = tonumber(blocking[2]) + p.window - now
    end
    v.remaining = p.limit - count
    v.reset = 0
    if count > 0 then
      local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      v.reset = tonumber(newest[2]) + p.window - now
    end
    return v
  end,
  commit = function(key, now, p, v)
    local stamp = num(now)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now - p.window))
    -- Members must be unique even within one millisecond: number them after the entries
    -- already stamped with this time.
    local first = redis.call('ZCOUNT', key, stamp, stamp)
    local entries = {}
    for i = 0, p.cost - 1 do
      entries[#entries + 1] = stamp
      entries[#entries + 1] = stamp .. ':' .. (first + i)
      -- unpack() is bounded by Lua's stack: add in batches.
      if #entries == 1000 or i == p.cost - 1 then
        redis.call('ZADD', key, unpack(entries))
        entries = {}
      end
    end
    -- Only a lowered limit can leave more entries than it allows; keep the newest.
    redis.call('ZREMRANGEBYRANK', key, 0, -(p.limit + 1))
    v.remaining = p.limit - (v.count + p.cost)
    v.reset = math.max(v.reset, p.window)
    expire_after(key, v.reset, p.ttl_floor)
  end,
}
