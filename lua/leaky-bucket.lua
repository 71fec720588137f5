-- Leaky bucket as a meter: requests leave one per interval I = window/limit ms. An admitted
-- request starts at max(now, next) and pushes `next` on by cost * I; it is admitted iff its
-- wait is at most (burst - cost) * I. So `burst` requests arriving together get delays
-- 0, I, ..., (burst - 1) * I, and the next is denied until I has passed. The caller waits
-- `delay` before proceeding.
-- State (string): next, the time the queue is free again. What a check read: when this
-- request would start.
-- Expects  common.lua
-- Defines  leaky_bucket, a step (see prelude.lua)
local function leaky_bucket(key, now, limit, window, burst, cost, charge, start)
  local interval = window / limit
  start = start or math.max(now, read_number(key) or 0)
  local wait = start - now
  if wait > (burst - cost) * interval then
    return false, burst - wait / interval, wait, wait - (burst - cost) * interval, 0
  end
  if not charge then
    return true, burst - wait / interval, wait, 0, wait, start
  end
  local next_free = start + cost * interval
  local backlog = next_free - now
  -- A number argument reaches Redis as '%.17g': exact.
  redis.call('SET', key, next_free, 'PX', ttl(backlog))
  return true, burst - backlog / interval, backlog, 0, wait
end
