-- Entry for a route with several policies, decided in one atomic call. `policy(i, ...)` runs
-- policy i's step on its key and arguments (generated when the store composes the script).
-- Every policy is checked before any is charged, and a request that one policy denies is
-- charged to none: the charging pass runs each step again, with `charge` and what the check
-- read (nothing else can have touched it in between).
-- The reply is filled in place, four values per policy after `admitted`, and formatted once.
-- `reply` and `read` (two slots per policy) come from the binding at their full size: a
-- table grown one slot at a time is reallocated at 1, 2, 4, 8, 16 slots.
-- Expects  the prelude, common.lua, and the binding: `policy(i, charge, a, b)`, `reply`
--          ({ 1, then four zeros per policy }) and `read` (two zeros per policy)
-- Reply    as in prelude.lua
local count = (#reply - 1) / 4
local admitted = true
for i = 1, count do
  local at = i * 4 - 2
  local allowed, retry, delay
  allowed, reply[at + 1], reply[at + 2], retry, delay, read[i * 2 - 1], read[i * 2] =
    policy(i, false)
  reply[at] = allowed
  reply[at + 3] = allowed and delay or retry
  admitted = admitted and allowed
end
-- Admitted, every policy allowed: each one's wait is its delay.
if admitted and consume then
  for i = 1, count do
    local at = i * 4 - 2
    local _
    reply[at], reply[at + 1], reply[at + 2], _, reply[at + 3] =
      policy(i, true, read[i * 2 - 1], read[i * 2])
  end
end

reply[1] = admitted and 1 or 0
-- common.lua's num written out, as in decide-one.lua: one call fewer per field.
for at = 2, #reply, 4 do
  local allowed = reply[at]
  reply[at] = allowed and 1 or 0
  local remaining, reset, wait = reply[at + 1], reply[at + 2], reply[at + 3]
  -- A denied request waits for nothing: its allowed policies' delays go, its denials' retries stay.
  if allowed and not admitted then wait = 0 end
  reply[at + 1] = remaining > 0 and remaining - remaining % 1 or 0
  reply[at + 2] = reset % 1 == 0 and reset or string.format('%.17g', reset)
  reply[at + 3] = wait % 1 == 0 and wait or string.format('%.17g', wait)
end
return reply
