-- Token bucket: holds at most `burst` tokens and refills continuously at one token per
-- window/limit ms. A request of cost c passes iff c tokens are present.
-- State (string): 'level:ts'. The level counts tokens times the window, so refill is
-- elapsed * limit: whole numbers for whole milliseconds, and fractions of a token stay
-- exact instead of drifting through repeated divisions.
-- What a check read: the level refilled up to ts.
-- Expects  common.lua
-- Defines  token_bucket, a step (see prelude.lua)
local function token_bucket(key, now, limit, window, burst, cost, charge, level, ts)
  local capacity = burst * window
  if not level then
    level, ts = capacity, now
    local stored, last = read_state(key)
    if stored then
      -- Never move ts backwards: a pod whose clock runs behind (clock: 'local') would
      -- otherwise make the next pod refill the same interval twice.
      ts = math.max(now, last)
      level = math.min(capacity, stored + (ts - last) * limit)
    end
  end
  local need = cost * window
  if level < need then
    return false, level / window, (capacity - level) / limit, (need - level) / limit, 0
  end
  if not charge then
    return true, level / window, (capacity - level) / limit, 0, 0, level, ts
  end
  level = level - need
  local reset = (capacity - level) / limit
  redis.call('SET', key, string.format('%.17g:%.17g', level, ts), 'PX',
    ttl(reset + (ts - now)))
  return true, level / window, reset, 0, 0
end
