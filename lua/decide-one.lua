-- Entry for a route with one policy, the common case: one step, no table but the reply.
-- Expects  the prelude, common.lua, and the binding: `step` (the policy's algorithm) and
--          `limit`, `window`, `burst`, `cost` (its values)
-- Reply    as in prelude.lua, for one policy
local allowed, remaining, reset, retry, delay = step(KEYS[1], now, limit, window, burst, cost,
  consume)
local admitted = allowed and 1 or 0
return { admitted, admitted, math.max(0, math.floor(remaining)), num(reset), num(retry),
  num(delay) }
