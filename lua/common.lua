-- What every algorithm shares; composed after the prelude.
-- Expects  ttl_floor (the prelude's)
-- Defines  num, ttl, read_number, read_state
-- Every script is compiled once but runs top to bottom on each call, so each function
-- defined here costs an allocation per decision: helpers stay few, small ones are written
-- out where they are used, and a script holds only those it calls: the store keeps each
-- helper's paragraph (blank-line separated, its comment and its function) only if the rest
-- of the script calls it (lib/stores/redis/lua-script.ts).

-- Every script floors as `x - x % 1`: Lua's % is floored, so this is math.floor(x) for any
-- finite x, negative ones included, without a global lookup and a C call per use.

-- Redis truncates Lua numbers to integers on the way to the client: whole numbers travel as
-- integers (cheapest), fractions as strings; '%.17g' round-trips a double exactly.
local function num(x)
  if x % 1 == 0 then
    return x
  end
  return string.format('%.17g', x)
end

-- The expiry of a key written now, for SET ... PX and PEXPIRE: a key lives exactly as long
-- as its state can still change a decision (`ms` from now), and at least ttl_floor (for
-- virtual clocks, whose milliseconds may pass more slowly than Redis's real ones).
-- Formatted here: a number argument reaches Redis through '%.17g', which costs more.
local function ttl(ms)
  return string.format('%d', math.max(math.ceil(ms), ttl_floor, 1))
end

-- A state is one string of one to three numbers 'a[:b[:c]]': one GET, one string.match.
-- Nothing when the key is absent.
local function read_state(key)
  local state = redis.call('GET', key)
  if state then
    local a, b, c = string.match(state, '^([^:]*):?([^:]*):?([^:]*)$')
    return tonumber(a), tonumber(b), tonumber(c)
  end
end

-- A state of one number (a leaky bucket's, a block's): no pattern to match. Nothing when the
-- key is absent (GET answers false, which tonumber turns to nil).
local function read_number(key)
  return tonumber(redis.call('GET', key))
end
