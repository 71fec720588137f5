/**
 * A stub put before a script under test: Redis TIME reads the trace's time (CLOCK_KEY, epoch
 * ms), and every expiry it writes (PX, PEXPIRE) is made absolute on the trace's clock shifted
 * by OFFSET_KEY (real time less the trace's, plus an hour), so that an expiry kept from an
 * earlier write and one written again compare as the scripts meant them, and none passes
 * while the test runs.
 */
export const CLOCK_KEY = 'test-clock';
/** Real time less the trace's, plus an hour: added to every expiry, made absolute. */
export const OFFSET_KEY = 'test-offset';
export const AS_TRACE_TIME = `
local server = redis
local function on_trace_time(command, ...)
  local args = { ... }
  local at = tonumber(server.call('GET', '${CLOCK_KEY}')) + server.call('GET', '${OFFSET_KEY}')
  if command == 'PEXPIRE' then
    command, args[2] = 'PEXPIREAT', at + args[2]
  end
  for i = 2, #args do
    if args[i - 1] == 'PX' then
      args[i - 1], args[i] = 'PXAT', at + args[i]
    end
  end
  return command, unpack(args)
end
local redis = setmetatable({
  call = function(command, ...)
    if command == 'TIME' then
      local ms = tonumber(server.call('GET', '${CLOCK_KEY}'))
      return { math.floor(ms / 1000), ms % 1000 * 1000 }
    end
    return server.call(on_trace_time(command, ...))
  end,
  pcall = function(...)
    return server.pcall(on_trace_time(...))
  end,
}, { __index = server })
`;
