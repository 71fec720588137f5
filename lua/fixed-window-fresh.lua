-- Fixed window, one policy, consume on Redis TIME: the path of every new client and of
-- every client's first request in a window, in one write. SET ... NX GET (Redis 7.0+) both
-- reads and, when nothing is there, writes the window's first charge; that request is
-- admitted, and the reply is only the time to the window's end: the client knows the rest
-- (remaining: limit - cost; retry and delay: 0). No GET, no reply table, and neither the
-- helpers nor the step are defined on that path. Otherwise the state SET returned is what
-- fixed_window would have read, and is handed to it as `read`; a server older than 7.0
-- refuses NX with GET (pcall returns the error), and fixed_window reads the state itself.
if cost <= limit then
  local index = math.floor(now / window)
  local to_end = (index + 1) * window - now
  local state = redis.pcall('SET', KEYS[1], string.format('%d:%d', index, cost), 'PX',
    string.format('%d', math.ceil(to_end)), 'NX', 'GET')
  if not state then
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
