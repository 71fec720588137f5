-- Fixed window, one policy, consume on Redis TIME: the path of every new client and of
-- every client's first request in a window, in one write. SET ... NX GET (Redis 7.0+) both
-- reads and, when nothing is there, writes the window's first charge; that request is
-- admitted, and the reply is only the time to the window's end: the client knows the rest
-- (remaining: limit - cost; retry and delay: 0). No GET, no reply table, and neither the
-- helpers nor the step are defined on that path. Otherwise the state SET returned is what
-- fixed_window would have read, and is handed to it as `read`; a server older than 7.0
-- refuses NX with GET (pcall returns the error), and fixed_window reads the state itself.
-- `first_state` is the format of that first state, 'index:cost' with the cost written in
-- (bound with the values): one number less to format.
-- The key expires at the window's end truncated to the ms: Redis keeps a key until its time
-- is exceeded, so through every ms of the window, and drops it within a ms of the window's
-- end. PXAT rather than PX, which Redis would rewrite to PXAT for its replicas and AOF.
if cost <= limit then
  local quotient = now / window
  local index = quotient - quotient % 1
  local ends = (index + 1) * window
  local state = redis.pcall('SET', KEYS[1], string.format(first_state, index), 'PXAT',
    string.format('%d', ends), 'NX', 'GET')
  if not state then
    local to_end = ends - now
    if to_end % 1 == 0 then
      return to_end
    end
    return string.format('%.17g', to_end)
  end
  if type(state) == 'string' then
    local stored, n = string.match(state, '^([^:]*):([^:]*)$')
    read = tonumber(stored) == index and tonumber(n) or 0
  end
end
