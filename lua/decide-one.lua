-- Entry for a route with one policy, the common case: one step, no table but the reply.
-- Expects  the prelude, common.lua, and the binding: `step` (the policy's algorithm) and
--          `limit`, `window`, `burst`, `cost` (its values)
-- Reply    as in prelude.lua, for one policy
local allowed, remaining, reset, retry, delay = step(KEYS[1], now, limit, window, burst, cost,
  consume)
local admitted = allowed and 1 or 0
-- common.lua's num written out: one call fewer per field on every decision.
return { admitted, admitted, remaining > 0 and math.floor(remaining) or 0,
  reset % 1 == 0 and reset or string.format('%.17g', reset),
  retry % 1 == 0 and retry or string.format('%.17g', retry),
  delay % 1 == 0 and delay or string.format('%.17g', delay) }
