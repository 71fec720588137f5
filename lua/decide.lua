-- Entry for a route with several policies, decided in one atomic call. `policy(i, ...)` runs
-- policy i's step on its key and arguments (generated when the store composes the script).
-- Every policy is checked before any is charged, and a request that one policy denies is
-- charged to none: the charging pass runs each step again, with `charge` and what the check
-- read (nothing else can have touched it in between).
-- The reply is filled in place, five values per policy after `admitted`, and formatted once.
-- `reply` and `read` (two slots per policy) come from the binding at their full size: a
-- table grown one slot at a time is reallocated at 1, 2, 4, 8, 16 slots.
-- Expects  the prelude, common.lua, and the binding: `policy(i, charge, a, b)`, `reply`
--          ({ 1, then five zeros per policy }) and `read` (two zeros per policy)
-- Reply    as in prelude.lua
local count = (#reply - 1) / 5
local admitted = true
for i = 1, count do
  local at = i * 5 - 3
  local allowed
  allowed, reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], read[i * 2 - 1],
    read[i * 2] = policy(i, false)
  reply[at] = allowed
  admitted = admitted and allowed
end
if admitted and consume then
  for i = 1, count do
    local at = i * 5 - 3
    reply[at], reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] =
      policy(i, true, read[i * 2 - 1], read[i * 2])
  end
end

reply[1] = admitted and 1 or 0
-- common.lua's num written out, as in decide-one.lua: one call fewer per field.
for at = 2, #reply, 5 do
  reply[at] = reply[at] and 1 or 0
  local remaining, reset, retry, delay = reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4]
  reply[at + 1] = remaining > 0 and remaining - remaining % 1 or 0
  reply[at + 2] = reset % 1 == 0 and reset or string.format('%.17g', reset)
  reply[at + 3] = retry % 1 == 0 and retry or string.format('%.17g', retry)
  reply[at + 4] = admitted and (delay % 1 == 0 and delay or string.format('%.17g', delay)) or 0
end
return reply
