import { Redis } from 'ioredis';
import type { RateLimitDecision } from '../../../lib/interfaces/rate-limit-decision.interface.js';
import type { RateLimitPolicy } from '../../../lib/interfaces/rate-limit-policy.interface.js';
import { LUA_SOURCES } from '../../../lib/stores/redis/lua-sources.generated.js';
import { LimiterFixture } from '../../support/limiters.js';
import { useRedisServer } from '../../support/redis-fixture.js';
import { redisNowMs, windowWithRoom } from '../../support/redis-server.js';

/**
 * A lone fixed window charged on Redis TIME starts with lua/fixed-window-fresh.lua: one
 * `SET … PXAT … NX GET`, which Redis accepts from 7.0 on. A 6.2 server refuses NX with GET
 * (`ERR syntax error`), and the script must then take the general fixed-window path. The
 * machine has no server older than 7.0, so the refusal is made in the script: this prelude,
 * put before lua/fixed-window-fresh.lua as the store composes it, gives the rest of the
 * script a `redis` of its own whose `pcall` answers a SET carrying both NX and GET as 6.2
 * does, and hands every other command to the server.
 */
const AS_REDIS_6_2 = `
local server = redis
local redis = setmetatable({
  pcall = function(command, ...)
    local nx, get = false, false
    for _, word in ipairs({ ... }) do
      word = string.upper(tostring(word))
      nx = nx or word == 'NX'
      get = get or word == 'GET'
    end
    if string.upper(command) == 'SET' and nx and get then
      return { err = 'ERR syntax error' }
    end
    return server.pcall(command, ...)
  end,
}, { __index = server })
`;

/** The script sources the store composes from (embedded from lua/ at build time). */
const sources = LUA_SOURCES as Record<string, string>;
const FRESH = sources['fixed-window-fresh'];

/** Room left in the window's current instance: the suite's decisions all fall in it. */
const ROOM_MS = 60_000;

/**
 * Calls of `command` the server has run since its statistics were reset, from inside scripts
 * too (INFO commandstats).
 */
async function callsOf(admin: Redis, command: string): Promise<number> {
  const stats = await admin.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

// One server for both cases (each test starts from FLUSHALL): its afterAll comes after
// theirs, which close the limiters that talk to it.
const redis = useRedisServer();

describe.each([
  // Redis 7.0+: the first charge in a window is the SET, a later one reads what SET returned.
  ['Redis 7.0 and later (SET … NX GET)', '', 0],
  // The general path: every decision reads the state with GET.
  ['a server that refuses NX with GET, as Redis 6.2 does', AS_REDIS_6_2, 1],
])('a lone fixed window on %s', (_, prelude, getsPerDecision) => {
  let fixture: LimiterFixture;
  beforeAll(async () => {
    // Read when the store composes a script, at its first decision on a route: the fixture
    // is made here, so its every script has this describe's prelude.
    sources['fixed-window-fresh'] = prelude + FRESH;
    // Every decision from the store: no deny cache, no admission on a failure, and a
    // deadline the loaded machine cannot miss.
    fixture = await new LimiterFixture('redis', redis.server.url, {
      denyCache: false,
      failureMode: 'closed',
      timeout: 30_000,
    }).ready();
  });
  afterAll(async () => {
    sources['fixed-window-fresh'] = FRESH;
    await fixture?.close();
  });
  beforeEach(async () => {
    await redis.admin.flushall();
    await redis.admin.config('RESETSTAT');
  });

  it('admits up to the limit and denies after, with the remaining, reset and expiry of the window', async () => {
    const window = await windowWithRoom(redis.admin, ROOM_MS);
    const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 3, window };
    const before = await redisNowMs(redis.admin);
    const decisions: [RateLimitDecision, boolean, number][] = [];
    // Cost 1 is the policy's own, written into its script; cost 2 is sent as an argument,
    // in another script. Both start with lua/fixed-window-fresh.lua.
    for (const [client, cost, allowed, remaining] of [
      ['one', 1, true, 2],
      ['one', 1, true, 1],
      ['one', 1, true, 0],
      ['one', 1, false, 0],
      ['two', 2, true, 1],
      ['two', 2, false, 1],
      ['two', 1, true, 0],
    ] as const) {
      decisions.push([await fixture.limiter.consume(client, policy, cost), allowed, remaining]);
    }
    // Before the reads below, which are GETs too.
    expect(await callsOf(redis.admin, 'get')).toBe(decisions.length * getsPerDecision);
    const ttls = await Promise.all(
      ['one', 'two'].map(async (client) => {
        const [key] = await redis.admin.keys(`*{${client}}*`);
        return [await redis.admin.get(key), await redis.admin.pttl(key)] as const;
      }),
    );
    const after = await redisNowMs(redis.admin);
    const index = Math.floor(before / window);
    const end = (index + 1) * window;
    for (const [decision, allowed, remaining] of decisions) {
      const [result] = decision.results;
      expect(decision.allowed).toBe(allowed);
      expect(result).toMatchObject({ allowed, remaining, delayMs: 0 });
      // The window's end less the decision's whole ms of Redis TIME, in [before, after].
      expect(Number.isInteger(result.resetMs)).toBe(true);
      expect(end - result.resetMs).toBeGreaterThanOrEqual(before);
      expect(end - result.resetMs).toBeLessThanOrEqual(after);
      expect(result.retryAfterMs).toBe(allowed ? 0 : result.resetMs);
    }
    for (const [state, ttl] of ttls) {
      // Both clients spent the limit in this window, and their keys expire at its end.
      expect(state).toBe(`${index}:3`);
      expect(ttl).toBeGreaterThanOrEqual(end - after - 1);
      expect(ttl).toBeLessThanOrEqual(end - before);
    }
  });

  it("counts nothing of an earlier window's state still there (its last ms)", async () => {
    const window = await windowWithRoom(redis.admin, ROOM_MS);
    const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 3, window };
    await fixture.limiter.consume('edge', policy);
    const [key] = await redis.admin.keys('*');
    const [index] = (await redis.admin.get(key))!.split(':').map(Number);
    // As the first request of a window finds it: present, but the previous window's, full.
    await redis.admin.set(key, `${index - 1}:3`, 'PX', 60_000);
    const gets = await callsOf(redis.admin, 'get');
    const decision = await fixture.limiter.consume('edge', policy);
    expect(await callsOf(redis.admin, 'get')).toBe(gets + getsPerDecision);
    expect(decision.results[0]).toMatchObject({ allowed: true, remaining: 2 });
    expect(await redis.admin.get(key)).toBe(`${index}:1`);
  });
});
