-- Entry for a route with several policies, decided in one atomic call. `policy(i, ...)` runs
-- policy i's step on its key and arguments (generated when the store composes the script).
-- Every policy is checked before any is charged, and a request that one policy denies is
-- charged to none: the charging pass runs each step again, with `charge` and the state the
-- check read (nothing else can have touched it in between).
local verdicts = {}
local admitted = true
for i = 1, #KEYS do
  verdicts[i] = { policy(i, false) }
  admitted = admitted and verdicts[i][1]
end
if admitted and charge then
  for i = 1, #KEYS do
    verdicts[i] = { policy(i, true, verdicts[i][6]) }
  end
end

-- Flat, so the client parses one array whatever the number of policies.
local reply = { admitted and 1 or 0 }
for i = 1, #KEYS do
  local v = verdicts[i]
  local at = 1 + (i - 1) * 5
  reply[at + 1] = v[1] and 1 or 0
  reply[at + 2] = math.max(0, math.floor(v[2]))
  reply[at + 3] = num(v[3])
  reply[at + 4] = num(v[4])
  reply[at + 5] = num(admitted and v[5] or 0)
end
return reply
