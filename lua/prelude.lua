-- Opens every script the store sends. The store composes one script per combination of
-- algorithms a route uses: this prelude, the algorithms' files, then an entry (decide-one.lua
-- for a single policy, decide.lua for several).
-- KEYS[i]  the key of policy i (all under one hash tag, so one Cluster slot)
-- ARGV     mode ('consume' | 'peek'), now (epoch ms; '' reads Redis TIME), ttl floor (ms),
--          wanted until (epoch ms in Redis time; '' for no limit), then four values per
--          policy: limit, window (ms), burst, cost
-- Each algorithm is one function
--   step(key, now, limit, window, burst, cost, charge, state)
--     -> allowed, remaining, reset, retry, delay[, state]
-- that reads its state and decides; only when `charge` is set and it admits does it write the
-- charged state (with its expiry) and report remaining and reset after the charge. An
-- admission without `charge` also returns what it read, so that a charging pass given it
-- back (`state`) need not read again; nil `state` means "read it".
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

-- Every script is compiled once but runs top to bottom on each call, so each function
-- defined here costs an allocation per decision: helpers stay few, and small ones are
-- written out where they are used. Two conventions the algorithms share:
-- - a key lives exactly as long as its state can still change a decision, and at least
--   ttl_floor: math.max(math.ceil(ms), ttl_floor, 1) (the floor is for virtual clocks,
--   whose milliseconds may pass more slowly than Redis's real ones);
-- - a state of two or three numbers is one string 'a:b[:c]', read with one GET, parsed
--   with one string.match and written with one SET ... PX.
