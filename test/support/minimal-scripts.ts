import type { Algorithm } from '../../lib/index.js';

/**
 * The floor the library's scripts are measured against: for each algorithm, the shortest
 * script a careful hand would write with the same semantics. Same clock (Redis TIME), same
 * state and expiry, denials charge nothing, the same reply fields (allowed, remaining,
 * reset, retry, delay; fractions as strings). What they leave out is what the library adds:
 * several policies in one call, peek, a caller's clock, the TTL floor and `wantedUntil`.
 * KEYS[1]; ARGV: limit, window (ms), burst, cost (the library writes a route's values into
 * its script instead; these take them as arguments, as the peers' scripts do). Expiries go
 * out as string.format('%d', ...), as the library's do: a number argument reaches Redis
 * through '%.17g', which costs more.
 */
const CLOCK = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local key, limit, window, burst, cost = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local function num(x) if x % 1 == 0 then return x end return string.format('%.17g', x) end
`;

export const MINIMAL_SCRIPTS: Record<Algorithm, string> = {
  'fixed-window':
    CLOCK +
    `
local index = math.floor(now / window)
local to_end = (index + 1) * window - now
local count = 0
local s = redis.call('GET', key)
if s then
  local at = string.find(s, ':', 1, true)
  if tonumber(string.sub(s, 1, at - 1)) == index then count = tonumber(string.sub(s, at + 1)) end
end
if count + cost > limit then return { 0, limit - count, count > 0 and to_end or 0, to_end, 0 } end
redis.call('SET', key, index .. ':' .. (count + cost), 'PX', string.format('%d', math.ceil(to_end)))
return { 1, limit - count - cost, to_end, 0, 0 }
`,
  'token-bucket':
    CLOCK +
    `
local capacity = burst * window
local level, ts = capacity, now
local s = redis.call('GET', key)
if s then
  local at = string.find(s, ':', 1, true)
  local last = tonumber(string.sub(s, at + 1))
  ts = math.max(now, last)
  level = math.min(capacity, tonumber(string.sub(s, 1, at - 1)) + (ts - last) * limit)
end
local need = cost * window
if level < need then
  return { 0, math.floor(level / window), num((capacity - level) / limit), num((need - level) / limit), 0 }
end
level = level - need
local reset = (capacity - level) / limit
redis.call('SET', key, string.format('%.17g:%.17g', level, ts), 'PX', string.format('%d', math.max(1, math.ceil(reset + ts - now))))
return { 1, math.floor(level / window), num(reset), 0, 0 }
`,
  'leaky-bucket':
    CLOCK +
    `
local interval = window / limit
local start = math.max(now, tonumber(redis.call('GET', key) or '0'))
local wait = start - now
if wait > (burst - cost) * interval then
  return { 0, math.max(0, math.floor(burst - wait / interval)), num(wait), num(wait - (burst - cost) * interval), 0 }
end
local backlog = start + cost * interval - now
redis.call('SET', key, start + cost * interval, 'PX', string.format('%d', math.max(1, math.ceil(backlog))))
return { 1, math.max(0, math.floor(burst - backlog / interval)), num(backlog), 0, num(wait) }
`,
  'sliding-window-counter':
    CLOCK +
    `
local index = math.floor(now / window)
local previous, current = 0, 0
local s = redis.call('GET', key)
if s then
  local a = string.find(s, ':', 1, true)
  local b = string.find(s, ':', a + 1, true)
  local stored = tonumber(string.sub(s, 1, a - 1))
  if stored == index then
    current, previous = tonumber(string.sub(s, a + 1, b - 1)), tonumber(string.sub(s, b + 1))
  elseif stored == index - 1 then
    previous = tonumber(string.sub(s, a + 1, b - 1))
  end
end
local elapsed = now - index * window
local estimate = previous * (1 - elapsed / window) + current
local to_end = (index + 1) * window - now
if estimate + cost > limit then
  local retry
  if previous > 0 then retry = (previous + current + cost - limit) * window / previous - elapsed end
  if not retry or retry >= to_end then
    retry = to_end
    if current + cost > limit then retry = retry + (current + cost - limit) * window / current end
  end
  local reset = current > 0 and to_end + window or (previous > 0 and to_end or 0)
  return { 0, math.max(0, math.floor(limit - estimate)), reset, num(retry), 0 }
end
redis.call('SET', key, string.format('%.17g:%.17g:%.17g', index, current + cost, previous), 'PX', string.format('%d', math.ceil(to_end + window)))
return { 1, math.max(0, math.floor(limit - estimate - cost)), to_end + window, 0, 0 }
`,
  'sliding-window-log':
    CLOCK +
    `
local since = '(' .. (now - window)
local count = redis.call('ZCOUNT', key, since, '+inf')
local reset = 0
if count > 0 then reset = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) + window - now end
if count + cost > limit then
  local blocking = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
  return { 0, limit - count, reset, tonumber(blocking[2]) + window - now, 0 }
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local first = redis.call('ZCOUNT', key, now, now)
local entries = {}
for i = 0, cost - 1 do
  entries[#entries + 1] = now
  entries[#entries + 1] = now .. ':' .. (first + i)
end
redis.call('ZADD', key, unpack(entries))
redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))
reset = math.max(reset, window)
redis.call('PEXPIRE', key, reset)
return { 1, limit - count - cost, reset, 0, 0 }
`,
};
