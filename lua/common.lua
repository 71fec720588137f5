-- Loaded first into the one script the store sends: the algorithm registry and the helpers
-- every algorithm shares. Each algorithm file adds itself to `algorithms` with two steps:
--   check(key, now, p)     reads state and returns a verdict; writes nothing
--   commit(key, now, p, v) charges p.cost, updates v.remaining and v.reset, sets the expiry
-- p = { limit, window, burst, cost, ttl_floor }; times are epoch milliseconds.
local algorithms = {}

-- Redis turns Lua numbers into integers on the way to the client, so fractions travel as
-- strings; '%.17g' round-trips a double exactly (tostring keeps only 14 digits).
local function num(x)
  return string.format('%.17g', x)
end

-- A key lives exactly as long as its state can still change a decision. The floor is for
-- virtual clocks, whose milliseconds may pass more slowly than Redis's real ones.
local function expire_after(key, ms, ttl_floor)
  redis.call('PEXPIRE', key, math.max(math.ceil(ms), ttl_floor, 1))
end
