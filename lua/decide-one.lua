-- Entry for a route with one policy, the common case: one step, no tables but the reply.
-- `step` is that policy's algorithm, bound when the store composes the script.
local allowed, remaining, reset, retry, delay = step(KEYS[1], now, tonumber(ARGV[5]),
  tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), mode == 'consume')
local admitted = allowed and 1 or 0
return { admitted, admitted, math.max(0, math.floor(remaining)), num(reset), num(retry),
  num(delay) }
