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
--   whose milliseconds may pass more slowly than Redis's real ones), sent as
--   string.format('%d', ...): a number argument reaches Redis through '%.17g', which
--   costs about 1,600 instructions more;
-- - a state of two or three numbers is one string 'a:b[:c]', read with one GET, parsed
--   with one string.match and written with one SET ... PX.
