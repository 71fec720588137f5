-- Gives a request's charge back to its policies (RateLimiter.refund, and the guard for
-- policies that count by outcome), all in one atomic call: each policy as lua/give-back.lua
-- says, so never beyond what its algorithm could hold nor into another window than the one
-- charged.
-- Expects  the general prelude (lua/prelude.lua), common.lua, give-back.lua
-- KEYS     each policy's key (under one hash tag)
-- ARGV     the prelude's four (mode, now, ttl floor, ''), then per policy: algorithm, limit,
--          window (ms), burst, units, and when its charge took effect (epoch ms on the
--          decisions' clock: any instant of the window charged, the sliding log's entries'
--          time, the leaky bucket's start; '' for the latest charge)
-- Reply    0
local at = 4
for i = 1, #KEYS do
  local algorithm, window = ARGV[at + 1], ARGV[at + 3] + 0
  local charged = tonumber(ARGV[at + 6])
  if charged and (algorithm == 'fixed-window' or algorithm == 'sliding-window-counter') then
    charged = charged / window
    charged = charged - charged % 1
  end
  give_back(KEYS[i], now, algorithm, ARGV[at + 2] + 0, window, ARGV[at + 4] + 0,
    ARGV[at + 5] + 0, charged)
  at = at + 6
end
return 0
