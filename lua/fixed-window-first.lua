-- A route whose one policy is a fixed window without a block, consumed on Redis TIME: charged
-- first, at the top of the script, before any function is made. A key already in its window,
-- the common case (a client making many requests), then costs one call, INCRBY, where the
-- step would GET and INCRBY. What INCRBY answers tells the rest: a count equal to the cost
-- means the key was absent (a stored count is never 0); other low bits than this window's, a
-- previous window's key not yet deleted; past the limit, a denial, and DECRBY takes the
-- charge back. Each case writes or restores what fixed_window (lua/fixed-window.lua) would
-- have, and answers as decide-one.lua would, its integer form included: the same reply,
-- state and expiry (test/stores/redis/script-shortcuts.spec.ts). A cost above the limit
-- (never admitted), a limit of 2^32 or more (whose charged count could reach 2^33), a window
-- of a fraction of a ms (whose times are fractions) and the 'index:count' form (which INCRBY
-- refuses) go on to the step.
-- Expects  the consume prelude; `limit`, `window`, `cost` (the policy's values) and
--          `cost_text` (the cost * 2^20 as text, so that Redis formats no number), bound
--          before it
if cost <= limit and limit < 4294967296 and window % 1 == 0 then
  local state = redis.pcall('INCRBY', KEYS[1], cost_text)
  if type(state) == 'number' then
    local index = math.floor(now / window)
    local to_end = (index + 1) * window - now
    local low = state % 1048576
    local count = (state - low) / 1048576
    if count > cost and low == index % 1048576 then
      if count <= limit then
        if limit - count < 67108864 and to_end < 134217728 then
          return (limit - count) * 134217728 + to_end
        end
        return { 1, 1, limit - count, to_end, 0, 0 }
      end
      redis.call('DECRBY', KEYS[1], cost_text)
      return { 0, 0, limit - count + cost, to_end, to_end, 0 }
    end
    -- Absent, or an earlier window's: this window's count was 0, and the cost fits.
    redis.call('SET', KEYS[1], string.format('%d', cost * 1048576 + index % 1048576), 'PX',
      string.format('%d', to_end))
    if limit - cost < 67108864 and to_end < 134217728 then
      return (limit - cost) * 134217728 + to_end
    end
    return { 1, 1, limit - cost, to_end, 0, 0 }
  end
end
