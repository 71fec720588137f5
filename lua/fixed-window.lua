-- Fixed window: epoch-aligned windows [k * window, (k + 1) * window), one counter each.
-- Cheap, but a client can spend a full quota at the end of one window and another at the
-- start of the next: up to 2x the limit within a short span around the boundary.
-- State (string), in one of two forms, both read by every script:
--   'index:count'  the window index and the cost admitted in it (integers): what a key that
--                  may outlive its window holds (a caller's clock, a TTL floor);
--   an integer     count * 2^20 + index % 2^20, written only where the key expires at its
--                  window's end in Redis time (`exact_expiry`: the consume prelude, on Redis
--                  TIME without a TTL floor), and only for limits below 2^33 - 1, so that it
--                  stays an exact double. Such a key lives no longer than its window, but a
--                  little past its end: Redis deletes a key in the ms after its expiry, and a
--                  script sees keys as of its start, before its TIME. The index's low bits
--                  tell it from that previous window's key, and INCRBY charges the count in
--                  place, keeping the expiry its first write set: no state formatted, no
--                  expiry written again (and lua/fixed-window-consume.lua charges first).
-- Charged first (`charge_first`: the lone policy of a route, consumed on Redis TIME): a key
-- already in its window, the common case (a client making many requests), then costs one
-- call, INCRBY, instead of a GET and an INCRBY. What INCRBY answers tells the rest: a count
-- equal to the cost means the key was absent (a stored count is never 0); other low bits
-- than this window's, a previous window's key not yet deleted; past the limit, a denial,
-- and DECRBY takes the charge back. Each case then writes or restores what the read-first
-- path would have: the same answer, state and expiry (test/stores/redis/script-shortcuts.spec.ts).
-- A cost above the limit (never admitted) and limits of 2^32 or more (whose charged count
-- could reach 2^33) are read first; so is the 'index:count' form, which INCRBY refuses.
-- What a check read: the count in the current window, and 1 if it is in the integer form.
-- Expects  ttl_floor (the prelude's), exact_expiry and charge_first (the binding's), and
--          with charge_first cost_text (the cost * 2^20 as text, so that Redis formats no number)
-- Defines  fixed_window, a step (see prelude.lua)
local function fixed_window(key, now, limit, window, _, cost, charge, count, tagged)
  local index = math.floor(now / window)
  if charge_first and charge and cost <= limit and limit < 4294967296 then
    local state = redis.pcall('INCRBY', key, cost_text)
    if type(state) == 'number' then
      local to_end = (index + 1) * window - now
      local low = state % 1048576
      count = (state - low) / 1048576
      if count > cost and low == index % 1048576 then
        if count <= limit then
          return true, limit - count, to_end, 0, 0
        end
        redis.call('DECRBY', key, cost_text)
        return false, limit - count + cost, to_end, to_end, 0
      end
      -- Absent, or an earlier window's: this window's count was 0, and the cost fits.
      redis.call('SET', key, string.format('%d', cost * 1048576 + index % 1048576), 'PX',
        string.format('%d', to_end))
      return true, limit - cost, to_end, 0, 0
    end
  end
  if not count then
    count = 0
    local state = redis.call('GET', key)
    if state then
      local n = tonumber(state)
      if n then
        local low = n % 1048576
        if low == index % 1048576 then
          count, tagged = (n - low) / 1048576, 1
        end
      else
        local stored, n = string.match(state, '^([^:]*):(.*)$')
        if tonumber(stored) == index then
          count = tonumber(n)
        end
      end
    end
  end
  local to_end = (index + 1) * window - now
  if count + cost > limit then
    return false, limit - count, count > 0 and to_end or 0, to_end, 0
  end
  if not charge then
    return true, limit - count, count > 0 and to_end or 0, 0, 0, count, tagged
  end
  count = count + cost
  -- Numbers formatted here, not by common.lua's helpers: a script of fixed windows alone then
  -- creates no function but its step, and Redis would format a number argument with '%.17g',
  -- which costs more.
  if exact_expiry and limit < 8589934591 then
    if tagged then
      redis.call('INCRBY', key, string.format('%d', cost * 1048576))
    else
      -- The count read, if any, was in the 'index:count' form, which this write replaces.
      redis.call('SET', key, string.format('%d', count * 1048576 + index % 1048576), 'PX',
        string.format('%d', math.ceil(to_end)))
    end
  else
    redis.call('SET', key, string.format('%d:%d', index, count), 'PX',
      string.format('%d', math.max(math.ceil(to_end), ttl_floor, 1)))
  end
  return true, limit - count, to_end, 0, 0
end
