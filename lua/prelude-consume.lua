-- Opens the script for the common case: consume, on Redis TIME, no TTL floor. Composed as
-- prelude.lua is, without the arguments this case does not need, so Redis converts fewer.
-- KEYS     as in prelude.lua
-- ARGV     wanted until (epoch ms in Redis time; '' for no limit), then what the policies'
--          values need (see prelude.lua)
-- Defines  consume, starts_blocks, ttl_floor, now (as prelude.lua)
-- Reply    as in prelude.lua
local consume, starts_blocks, ttl_floor = true, true, 0
local time = redis.call('TIME')
local now = time[2] / 1000
now = time[1] * 1000 + now - now % 1
local wanted_until = ARGV[1]
-- Arithmetic converts an argument as tonumber() would, without the call.
if wanted_until ~= '' and now > wanted_until + 0 then
  return {}
end
