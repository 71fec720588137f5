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
--                  expiry written again (lua/fixed-window-first.lua decides before the step).
-- What a check read: the count in the current window, and 1 if it is in the integer form.
-- Expects  ttl_floor (the prelude's), exact_expiry (the binding's)
-- Defines  fixed_window, a step (see prelude.lua)
local function fixed_window(key, now, limit, window, _, cost, charge, count, tagged)
  local index = now / window
  index = index - index % 1
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
