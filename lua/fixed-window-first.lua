-- A route whose one policy is a fixed window without a block, consumed on Redis TIME: decided
-- at the top of the script, before any function is made, in one of two openings the store
-- picks by what the route's recent decisions found (lib/stores/redis/window-opening.ts); both
-- give the same reply, state and expiry as each other and as the step
-- (test/stores/redis/script-shortcuts.spec.ts).
-- Charged first (`written_first` false), for a key already in its window, the common case (a
--   client making many requests): one call, INCRBY, where the step would GET and INCRBY.
--   What INCRBY answers tells the rest: a count equal to the cost means the key was absent
--   (a stored count is never 0); other low bits than this window's, a previous window's key
--   not yet deleted; past the limit, a denial, and DECRBY takes the charge back.
-- Written first (`written_first` true), for a key new in its window (a new client, or a
--   client's first request in a window): one call, SET ... NX GET (Redis 7.0+), which writes
--   the window's first charge when nothing is there and otherwise returns what is, which
--   INCRBY then charges as above.
-- Each case writes or restores what fixed_window (lua/fixed-window.lua) would have, and
-- answers as decide-one.lua would, its integer form included. A cost above the limit (never
-- admitted), a limit of 2^32 or more (whose charged count could reach 2^33), a window of a
-- fraction of a ms (whose times are fractions), the 'index:count' form (which INCRBY
-- refuses) and a server that refuses NX with GET go on to the step.
-- Expects  the consume prelude; `limit`, `window`, `cost` (the policy's values),
--          `cost_text` (the cost * 2^20 as text, so that Redis formats no number) and
--          `written_first`, bound before it
if cost <= limit and limit < 4294967296 and window % 1 == 0 then
  -- Remaining once this request is charged; nil: the step decides.
  local left, index, to_end
  if written_first then
    index = now / window
    index = index - index % 1
    to_end = (index + 1) * window - now
    local first = string.format('%d', cost * 1048576 + index % 1048576)
    local state = redis.pcall('SET', KEYS[1], first, 'PX', string.format('%d', to_end), 'NX',
      'GET')
    if not state then
      left = limit - cost
    elseif type(state) == 'string' then
      local n = tonumber(state)
      if n then
        local low = n % 1048576
        if low ~= index % 1048576 then
          redis.call('SET', KEYS[1], first, 'PX', string.format('%d', to_end))
          left = limit - cost
        else
          left = limit - (n - low) / 1048576 - cost
          if left < 0 then
            return { 0, left + cost, to_end, to_end }
          end
          redis.call('INCRBY', KEYS[1], cost_text)
        end
      end
    end
  else
    local state = redis.pcall('INCRBY', KEYS[1], cost_text)
    if type(state) == 'number' then
      index = now / window
      index = index - index % 1
      to_end = (index + 1) * window - now
      local low = state % 1048576
      local count = (state - low) / 1048576
      if count > cost and low == index % 1048576 then
        left = limit - count
        if left < 0 then
          redis.call('DECRBY', KEYS[1], cost_text)
          return { 0, left + cost, to_end, to_end }
        end
      else
        -- Absent, or an earlier window's: this window's count was 0, and the cost fits.
        redis.call('SET', KEYS[1], string.format('%d', cost * 1048576 + index % 1048576), 'PX',
          string.format('%d', to_end))
        left = limit - cost
      end
    end
  end
  if left then
    if left < 67108864 and to_end < 134217728 then
      return left * 134217728 + to_end
    end
    return { 1, left, to_end, 0 }
  end
end
