-- Opens the general script: any mode, Redis TIME or the caller's clock, a TTL floor.
-- The store composes one script per route (lib/stores/redis/lua-script.ts): a prelude (this
-- one, or prelude-consume.lua for the common case), common.lua, each algorithm's file once,
-- block.lua if a policy has a block duration, the binding of the policies to their steps
-- (generated), then an entry (decide-one.lua for a single policy, decide.lua for several).
-- KEYS     the key of each policy (all under one hash tag, so one Cluster slot), then the
--          block key of each policy with a block duration (see block.lua)
-- ARGV     mode ('consume' | 'peek' | 'check'), now (epoch ms; '' reads Redis TIME), ttl
--          floor (ms), wanted until (epoch ms in Redis time; '' for no limit), then per
--          policy: limit, window (ms), burst (buckets only), cost, block (ms; only with a
--          block duration). A route's own values (all but the costs, or all) may instead be
--          written into its script as literals, and are then not sent.
-- Defines  consume, starts_blocks, ttl_floor, now
-- Reply    admitted (1 | 0), then per policy: allowed (1 | 0), remaining, reset, and its
--          wait: the retry if denied, else the delay (a step that allows never has a retry,
--          one that denies never a delay); a lone policy's reply leaves out `admitted`,
--          which is its `allowed`. Each value a client decodes costs it time, and these two
--          carry one. A lone policy admitted at once (no wait) with remaining below 2^26 and
--          a whole reset below 2^27 ms answers one integer, remaining * 2^27 + reset
--          (decide-one.lua, fixed-window-first.lua). An empty array when the caller's wait
--          ended before the script ran: nothing read, nothing charged.
-- Each algorithm file defines one step
--   step(key, now, limit, window, burst, cost, charge[, a, b])
--     -> allowed, remaining, reset, retry, delay[, a, b]
-- that reads its state and decides; only when `charge` is set and it admits does it write
-- the charged state (with its expiry) and report remaining and reset after the charge. An
-- admission without `charge` also returns what it read, as one or two numbers (a, b), so
-- that a charging pass given them back need neither read nor parse again; nil `a` means
-- "read it".
local consume = ARGV[1] == 'consume'
-- 'check', the first phase of a Cluster decision across slots: denies as a consume does,
-- starting blocks (block.lua), but charges nothing.
local starts_blocks = consume or ARGV[1] == 'check'
local now = tonumber(ARGV[2])
local ttl_floor = ARGV[3] + 0
local wanted_until = tonumber(ARGV[4])
if not now or wanted_until then
  local time = redis.call('TIME')
  local redis_now = time[2] / 1000
  redis_now = time[1] * 1000 + redis_now - redis_now % 1
  if wanted_until and redis_now > wanted_until then
    return {}
  end
  now = now or redis_now
end
