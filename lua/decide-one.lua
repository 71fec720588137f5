-- Entry for a route with one policy, the common case: one step, no table but the reply.
-- `step` is the policy's algorithm and `limit`, `window`, `burst`, `cost` its values, bound
-- when the store composes the script; `read` is what a step would read itself, if already
-- read (fixed-window-fresh.lua), else nil.
local allowed, remaining, reset, retry, delay = step(KEYS[1], now, limit, window, burst, cost,
  consume, read)
return { allowed and 1 or 0, math.max(0, math.floor(remaining)), num(reset), num(retry),
  num(delay) }
