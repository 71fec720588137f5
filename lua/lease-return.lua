-- Gives back units a pod leased and did not use, while they are still the budget's (see
-- lua/give-back.lua): a window's only within the window they were charged in (later, that
-- window's count no longer limits anything, and neither does the lease), a bucket's into the
-- bucket, which they never fill past its capacity. Sent when an app closes (and when a pod
-- drops a holding it cannot keep).
-- Expects  the general prelude (lua/prelude.lua), common.lua, give-back.lua
-- KEYS     the policy's key
-- ARGV     the prelude's four (mode, now, ttl floor, ''), then algorithm, limit, window (ms),
--          burst, units, the units' window index
-- Reply    how many units went back
return give_back(KEYS[1], now, ARGV[5], ARGV[6] + 0, ARGV[7] + 0, ARGV[8] + 0, ARGV[9] + 0,
  ARGV[10] + 0)
