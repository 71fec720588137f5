-- Opens every script the store sends. The store composes one script per combination of
-- algorithms a route uses: this prelude, the algorithms' files, then an entry (decide-one.lua
-- for a single policy, decide.lua for several).
-- KEYS[i]  the key of policy i (all under one hash tag, so one Cluster slot)
-- ARGV     mode ('consume' | 'peek'), now (epoch ms; '' reads Redis TIME), ttl floor (ms),
--          wanted until (epoch ms in Redis time; '' for no limit), then four values per
--          policy: limit, window (ms), burst, cost
-- Each algorithm is one function
--   step(key, now, limit, window, burst, cost, charge) -> allowed, remaining, reset, retry, delay
-- that reads its state and decides; only when `charge` is set and it admits does it write the
-- charged state (with its expiry) and report remaining and reset after the charge.
-- Reply: admitted (1 | 0), then allowed, remaining, reset, retry, delay per policy; or -1 alone
-- when the caller's wait ended before the script ran: nothing read, nothing charged.
local mode = ARGV[1]
local now = tonumber(ARGV[2])
local ttl_floor = tonumber(ARGV[3])
local wanted_until = tonumber(ARGV[4])
if not now or wanted_until then
  local time = redis.call('TIME')
  local redis_now = time[1] * 1000 + math.floor(time[2] / 1000)
  if wanted_until and redis_now > wanted_until then
    return { -1 }
  end
  now = now or redis_now
end

-- Redis truncates Lua numbers to integers on the way to the client: whole numbers travel as
-- integers (cheapest), fractions as strings; '%.17g' round-trips a double exactly.
local function num(x)
  if x % 1 == 0 then
    return x
  end
  return string.format('%.17g', x)
end

-- A key lives exactly as long as its state can still change a decision. The floor is for
-- virtual clocks, whose milliseconds may pass more slowly than Redis's real ones.
local function lifetime(ms)
  return math.max(math.ceil(ms), ttl_floor, 1)
end

-- States of two or three numbers are one string 'a:b[:c]', written with one SET ... PX.
-- Returns the numbers after the first and second ':' (nil when absent).
local function split(state)
  local first = string.find(state, ':', 1, true)
  local second = string.find(state, ':', first + 1, true)
  if second then
    return tonumber(string.sub(state, 1, first - 1)),
      tonumber(string.sub(state, first + 1, second - 1)),
      tonumber(string.sub(state, second + 1))
  end
  return tonumber(string.sub(state, 1, first - 1)), tonumber(string.sub(state, first + 1))
end
