-- Entry for a route with one policy, the common case: one step, no table but the reply.
local allowed, remaining, reset, retry, delay = policy(1, charge)
return { allowed and 1 or 0, math.max(0, math.floor(remaining)), num(reset), num(retry),
  num(delay) }
