-- Entry for a leased decision: the request is decided as decide.lua decides it (every policy
-- checked before any is charged, nothing charged when one denies), and each leased policy is
-- charged a lease of up to `lease` units instead of the request's cost alone; the pod admits
-- later requests from what it holds, so its units are budget already charged here.
-- Grant: min(lease, max(cost, floor(left / LEASE_SHARE))), `left` being what remains unleased
-- (the held units below included). While `left` is at least LEASE_SHARE leases a call takes a
-- whole lease; below, each call takes an eighth of what is left, so a budget running low is
-- spread thinly over the pods that ask (a burst of k calls leaves (7/8)^k of it unleased), and
-- once fewer than LEASE_SHARE units are left they go out one request at a time.
-- Held units: a pod holding fewer units than the request costs sends them back in the same
-- call; they count towards the request while they are still the budget's (a window's within
-- that window, compared by index; a bucket's always, the pod sending them only before its
-- lease ends), and stay with the pod when the request is denied (nothing is written then).
-- Expects  a prelude, common.lua, and the binding: `steps` (policy i's step), `leading`
--          (how many ARGV the prelude reads),
--          `reply` ({ 1, then eight zeros per policy }) and `values` (eight zeros per
--          policy), at their full size: a table grown one slot at a time is reallocated as
--          it grows
-- ARGV     after the prelude's, per policy: limit, window, burst ('' for the windows),
--          cost, lease (0: not leased), held units, the held units' window index
-- Reply    admitted, then per policy: allowed, remaining, reset, retry, delay, granted (units
--          charged to the pod's lease, the request's cost included; 0 when not leased), the
--          window index, and in how many ms the lease ends (window end; bucket: refill time)
local LEASE_SHARE = 8
local count = #steps
local admitted = true
for i = 1, count do
  local at = leading + (i - 1) * 7
  local limit, window, burst = ARGV[at + 1] + 0, ARGV[at + 2] + 0, tonumber(ARGV[at + 3])
  local cost, lease, held = ARGV[at + 4] + 0, ARGV[at + 5] + 0, ARGV[at + 6] + 0
  local index = now / window
  index = index - index % 1
  if held > 0 and not burst and index ~= ARGV[at + 7] + 0 then
    held = 0
  end
  local allowed, remaining, reset, retry, delay, a, b =
    steps[i](KEYS[i], now, limit, window, burst, cost - held, false)
  local v = i * 8 - 8
  values[v + 1], values[v + 2], values[v + 3], values[v + 4] = limit, window, burst, cost
  values[v + 5], values[v + 6], values[v + 7], values[v + 8] = lease, held, a, b
  local r = i * 8 - 6
  reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] =
    allowed, remaining, reset, retry, delay
  reply[r + 5], reply[r + 6], reply[r + 7] = 0, index, 0
  admitted = admitted and allowed
end
if admitted and consume then
  for i = 1, count do
    local v = i * 8 - 8
    local limit, window, burst, cost = values[v + 1], values[v + 2], values[v + 3], values[v + 4]
    local lease, held = values[v + 5], values[v + 6]
    local r = i * 8 - 6
    local take = cost
    if lease > 0 then
      local share = (reply[r + 1] + held) / LEASE_SHARE
      share = share - share % 1
      take = math.min(lease, math.max(cost, share))
    end
    reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] =
      steps[i](KEYS[i], now, limit, window, burst, take - held, true, values[v + 7],
        values[v + 8])
    if lease > 0 then
      reply[r + 5] = take
      if burst then
        reply[r + 7] = take * window / limit
      else
        reply[r + 7] = (reply[r + 6] + 1) * window - now
      end
    end
  end
end

reply[1] = admitted and 1 or 0
for at = 2, #reply, 8 do
  reply[at] = reply[at] and 1 or 0
  local remaining = reply[at + 1]
  reply[at + 1] = remaining > 0 and remaining - remaining % 1 or 0
  reply[at + 2] = num(reply[at + 2])
  reply[at + 3] = num(reply[at + 3])
  reply[at + 4] = admitted and num(reply[at + 4]) or 0
  reply[at + 7] = num(reply[at + 7])
end
return reply
