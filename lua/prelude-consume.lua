-- Opens the script for the common case: consume, on Redis TIME, no TTL floor. Same layout
-- as prelude.lua without the arguments this case does not need, so Redis converts fewer.
-- ARGV     wanted until (epoch ms in Redis time; '' for no limit), then what the policies'
--          values need (see prelude.lua)
-- Arithmetic converts an argument as tonumber() would, without the call.
local consume, starts_blocks, ttl_floor = true, true, 0
local time = redis.call('TIME')
-- x - x % 1 is math.floor(x) for x >= 0, exactly, without a call (about 400 instructions).
local micros = time[2] / 1000
local now = time[1] * 1000 + (micros - micros % 1)
local wanted_until = ARGV[1]
if wanted_until ~= '' and now > wanted_until + 0 then
  return -1
end
