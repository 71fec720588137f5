-- Opens the general script: any mode, Redis TIME or the caller's clock, a TTL floor. The
-- store composes one script per combination of algorithms a route uses and per variant:
-- a prelude (this one, or prelude-consume.lua for the common case), num.lua, the
-- algorithms' files, the binding of the policies to their steps (generated), then an
-- entry (decide-one.lua for a single policy, decide.lua for several).
-- KEYS[i]  the key of policy i (all under one hash tag, so one Cluster slot)
-- KEYS     then the block key of each policy with a block duration (see block.lua)
-- ARGV     mode ('consume' | 'peek' | 'check'), now (epoch ms; '' reads Redis TIME), ttl
--          floor (ms), wanted until (epoch ms in Redis time; '' for no limit), then per
--          policy: limit, window (ms), burst (buckets only), cost, block (ms; only with a
--          block duration).
--          A route's own values (all but the costs, or all) may instead be written into its
--          script as literals when the store composes it, and are then not sent.
-- Each algorithm is one function
--   step(key, now, limit, window, burst, cost, charge[, a, b])
--     -> allowed, remaining, reset, retry, delay[, a, b]
-- that reads its state and decides; only when `charge` is set and it admits does it write the
-- charged state (with its expiry) and report remaining and reset after the charge. An
-- admission without `charge` also returns what it read, as one or two numbers (a, b), so
-- that a charging pass given them back need neither read nor parse again; nil `a` means
-- "read it".
-- Reply: for one policy allowed (1 | 0), remaining, reset, retry, delay; for several,
-- admitted (1 | 0) then those five per policy; or -1 when the caller's wait ended before the
-- script ran: nothing read, nothing charged; or, from fixed-window-fresh.lua only, a single
-- number (or fraction string): the window's first charge, admitted, with that reset.
local consume = ARGV[1] == 'consume'
-- 'check', the first phase of a Cluster decision across slots: denies as a consume does,
-- starting blocks (block.lua), but charges nothing.
local starts_blocks = consume or ARGV[1] == 'check'
local now = tonumber(ARGV[2])
local ttl_floor = ARGV[3] + 0
local wanted_until = tonumber(ARGV[4])
if not now or wanted_until then
  local time = redis.call('TIME')
  local redis_now = time[1] * 1000 + math.floor(time[2] / 1000)
  if wanted_until and redis_now > wanted_until then
    return -1
  end
  now = now or redis_now
end
