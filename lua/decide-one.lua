-- Entry for a route with one policy, the common case: one step, no table but the reply.
-- Expects  the prelude, common.lua, and the binding: `step` (the policy's algorithm) and
--          `limit`, `window`, `burst`, `cost` (its values)
-- Reply    as in prelude.lua, for one policy (no `admitted`; its integer form included)
local allowed, remaining, reset, retry, delay = step(KEYS[1], now, limit, window, burst, cost,
  consume)
-- common.lua's num written out: one call fewer per field on every decision.
local remaining_whole = remaining > 0 and remaining - remaining % 1 or 0
local reset_sent = reset % 1 == 0 and reset or string.format('%.17g', reset)
-- The usual answer, admitted at once, as one integer (see prelude.lua): the rest goes without
-- saying, and a table reply costs Redis several lookups before its first field.
if allowed and retry == 0 and delay == 0 and remaining_whole < 67108864 and reset % 1 == 0
    and reset < 134217728 then
  return remaining_whole * 134217728 + reset
end
local wait = allowed and delay or retry
return { allowed and 1 or 0, remaining_whole, reset_sent,
  wait % 1 == 0 and wait or string.format('%.17g', wait) }
