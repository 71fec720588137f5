-- Entry point, loaded last: decides every policy of one request in a single atomic call.
-- KEYS[i]  the key of policy i (all in one hash tag, so one Cluster slot)
-- ARGV     mode ('consume' | 'peek'), now (epoch ms; '' reads Redis TIME), ttl floor (ms),
--          then five values per policy: algorithm, limit, window (ms), burst, cost
-- Every policy is checked before any is charged, and a request that one policy denies is
-- charged to none. Reply: admitted (1|0), then allowed, remaining, reset, retry, delay per policy.
local mode = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local ttl_floor = tonumber(ARGV[3])

local steps, policies, verdicts = {}, {}, {}
local admitted = true
for i = 1, #KEYS do
  local at = 3 + (i - 1) * 5
  local algorithm = algorithms[ARGV[at + 1]]
  if not algorithm then
    return redis.error_reply('ERR unknown rate limit algorithm ' .. tostring(ARGV[at + 1]))
  end
  local p = {
    limit = tonumber(ARGV[at + 2]),
    window = tonumber(ARGV[at + 3]),
    burst = tonumber(ARGV[at + 4]),
    cost = tonumber(ARGV[at + 5]),
    ttl_floor = ttl_floor,
  }
  steps[i], policies[i] = algorithm, p
  verdicts[i] = algorithm.check(KEYS[i], now, p)
  admitted = admitted and verdicts[i].allowed
end

if admitted and mode == 'consume' then
  for i = 1, #KEYS do
    steps[i].commit(KEYS[i], now, policies[i], verdicts[i])
  end
end

-- Flat, so the client parses one array whatever the number of policies.
local reply = { admitted and 1 or 0 }
for i = 1, #KEYS do
  local v = verdicts[i]
  local at = 1 + (i - 1) * 5
  reply[at + 1] = v.allowed and 1 or 0
  reply[at + 2] = math.max(0, math.floor(v.remaining))
  reply[at + 3] = num(v.reset)
  reply[at + 4] = num(v.retry)
  reply[at + 5] = num(admitted and v.delay or 0)
end
return reply
