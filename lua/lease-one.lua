-- Entry for a leased decision of one policy, the common case: lease.lua's decision and
-- reply, without its tables (the steps, what the check read, the reply filled slot by slot),
-- which Redis would build on every call. Held to lease.lua by
-- test/stores/redis/lease-script.spec.ts.
-- Expects  a prelude, common.lua, and the binding: `step` (the policy's step) and `leading`
--          (how many ARGV the prelude reads)
-- ARGV     as lease.lua's, for one policy
-- Reply    as lease.lua's, for one policy
local LEASE_SHARE = 8
local limit, window, burst = ARGV[leading + 1] + 0, ARGV[leading + 2] + 0,
  tonumber(ARGV[leading + 3])
local cost, lease, held = ARGV[leading + 4] + 0, ARGV[leading + 5] + 0, ARGV[leading + 6] + 0
local index = now / window
index = index - index % 1
if held > 0 and not burst and index ~= ARGV[leading + 7] + 0 then
  held = 0
end
local admitted, remaining, reset, retry, delay, a, b =
  step(KEYS[1], now, limit, window, burst, cost - held, false)
local allowed, granted, ends = admitted, 0, 0
if admitted and consume then
  local take = cost
  if lease > 0 then
    local share = (remaining + held) / LEASE_SHARE
    share = share - share % 1
    take = math.min(lease, math.max(cost, share))
  end
  allowed, remaining, reset, retry, delay =
    step(KEYS[1], now, limit, window, burst, take - held, true, a, b)
  if lease > 0 then
    granted = take
    if burst then
      ends = take * window / limit
    else
      ends = (index + 1) * window - now
    end
  end
end
-- common.lua's num written out: no function made for it on each call.
return { admitted and 1 or 0, allowed and 1 or 0, remaining > 0 and remaining - remaining % 1 or 0,
  reset % 1 == 0 and reset or string.format('%.17g', reset),
  retry % 1 == 0 and retry or string.format('%.17g', retry),
  (not admitted or delay == 0) and 0 or delay % 1 == 0 and delay or string.format('%.17g', delay),
  granted, index, ends % 1 == 0 and ends or string.format('%.17g', ends) }
