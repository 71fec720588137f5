-- Block duration (a policy's blockDuration): once the policy denies a client in a consume
-- (or in a Cluster check, see prelude.lua), the client stays denied by it for `block` ms from
-- then, whatever its budget holds; the denials in between do not extend it. The block is a
-- key of its own beside the policy's (KEYS after the policies'), holding when it ends on the
-- decisions' clock and expiring then.
-- Composed only into scripts of routes with such a policy: wraps that policy's step.
-- Expects  common.lua, starts_blocks (the prelude's)
-- Defines  with_block(step, block_key, block), a step that wraps `step`
local function with_block(step, block_key, block)
  return function(key, now, limit, window, burst, cost, charge, a, b)
    local ends = read_number(block_key)
    if ends and now < ends then
      local _, _, reset, retry = step(key, now, limit, window, burst, cost, false)
      local left = ends - now
      return false, 0, math.max(reset, left), math.max(retry, left), 0
    end
    local allowed, remaining, reset, retry, delay, read_a, read_b =
      step(key, now, limit, window, burst, cost, charge, a, b)
    if allowed or not starts_blocks then
      return allowed, remaining, reset, retry, delay, read_a, read_b
    end
    redis.call('SET', block_key, num(now + block), 'PX', ttl(block))
    return false, 0, math.max(reset, block), math.max(retry, block), 0
  end
end
