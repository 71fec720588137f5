import { ALGORITHMS, type RateLimitDecision, type RateLimitPolicy } from '../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { seededRandom } from '../support/seeded-random.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

/**
 * The Lua scripts are the one source of truth; the embedded store is held to them here.
 * Randomized traces of (time, key, cost, policies) run through both stores on one virtual
 * clock, and every decision must match field for field. A seeded generator makes a
 * failure reproducible: the seed is in the test name.
 */
const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const STEPS = 400;

function randomPolicies(next: () => number): RateLimitPolicy[] {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const count = 1 + Math.floor(next() * 3);
  return Array.from({ length: count }, (_, i) => {
    const limit = pick([1, 2, 3, 5, 7, 10, 25]);
    return {
      name: `p${i}`,
      algorithm: pick(ALGORITHMS),
      limit,
      window: pick([100, 250, 1_000, 1_500, 7_000]),
      burst: pick([undefined, 1, limit, limit * 2]),
    };
  });
}

describe('embedded store matches the Lua scripts', () => {
  let server: RedisServer;
  const clock = new VirtualClock();
  let redis: LimiterFixture;
  let memory: LimiterFixture;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = await new LimiterFixture('redis', server.url, { clock: clock.read }).ready();
    memory = new LimiterFixture('memory', undefined, { clock: clock.read });
  });
  afterAll(async () => {
    await Promise.all([redis.close(), memory.close()]);
    await server.stop();
  });

  it.each(SEEDS)('trace with seed %i: identical decisions, step by step', async (seed) => {
    const next = seededRandom(seed);
    const routes = Array.from({ length: 4 }, () => randomPolicies(next));
    const clients = ['alice', 'bob', 'carol'].map((name) => `${name}-${seed}`);
    clock.set(1_700_000_000_000 + Math.floor(next() * 10_000));
    const outcomes = { admitted: 0, denied: 0 };
    for (let step = 0; step < STEPS; step++) {
      // Mostly small steps (bursts within a window), sometimes long gaps, sometimes none.
      const gap = next() < 0.3 ? 0 : next() < 0.9 ? next() * 120 : next() * 8_000;
      clock.advance(next() < 0.5 ? Math.floor(gap) : gap);
      const policies = routes[Math.floor(next() * routes.length)];
      const key = clients[Math.floor(next() * clients.length)];
      const maxCost = Math.min(
        ...policies.map((p) => (p.algorithm?.endsWith('bucket') ? (p.burst ?? p.limit) : p.limit)),
      );
      const cost = 1 + Math.floor(next() * Math.min(maxCost, 3));
      const mode = next() < 0.1 ? 'peek' : 'consume';
      const [fromRedis, fromMemory]: RateLimitDecision[] = await Promise.all(
        [redis, memory].map((fixture) => fixture.limiter[mode](key, policies, cost)),
      );
      expect({ step, ...fromMemory }).toEqual({ step, ...fromRedis });
      outcomes[fromRedis.allowed ? 'admitted' : 'denied']++;
    }
    // A trace that never denies (or never admits) would compare nothing interesting.
    expect(outcomes.admitted).toBeGreaterThan(STEPS / 40);
    expect(outcomes.denied).toBeGreaterThan(STEPS / 40);
  });
});
