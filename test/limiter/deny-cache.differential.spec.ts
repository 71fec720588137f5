import {
  ALGORITHMS,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { seededRandom } from '../support/seeded-random.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The deny cache must be invisible but for the store calls it saves: the same trace run
 * through a limiter with it and one without must give the same decisions, field for field
 * (retryAfterMs included, which the contract makes exact). One limiter per arm, so "all
 * else unchanged" holds: nothing outside the trace touches the budgets.
 *
 * Traces mix every algorithm, whole and fractional intervals, blocks, several policies
 * per route, a policy shared by two routes (so one route's admissions change the other's
 * budget), costs 1 to 3, peeks and resets; they jump to the retry times the denials
 * announced, and a millisecond before them, where an inexact count-down shows.
 */
const shared: RateLimitPolicy = {
  name: 'shared',
  algorithm: 'token-bucket',
  limit: 4,
  window: 400,
};

function routesOf(next: () => number): RateLimitPolicy[][] {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const single = ALGORITHMS.map((algorithm, i): RateLimitPolicy[] => [
    {
      name: `one${i}`,
      algorithm,
      limit: pick([1, 3, 5, 10]),
      window: pick([300, 1_000, 1_500]),
      burst: algorithm.endsWith('bucket') ? pick([undefined, 3, 6]) : undefined,
    },
  ]);
  const mixed = Array.from({ length: 4 }, (_, route): RateLimitPolicy[] =>
    Array.from({ length: 2 + Math.floor(next() * 2) }, (_, i) => {
      const algorithm = pick(ALGORITHMS);
      return {
        name: `mix${route}p${i}`,
        algorithm,
        limit: pick([2, 3, 4, 7, 10]),
        window: pick([200, 500, 1_000, 2_500]),
        burst: algorithm.endsWith('bucket') ? pick([undefined, 3, 5]) : undefined,
        blockDuration: pick([undefined, undefined, undefined, 250]),
      };
    }),
  );
  return [...single, ...mixed, [shared], [shared, mixed[0][0]]];
}

const capacity = (policy: RateLimitPolicy) =>
  (policy.algorithm?.endsWith('bucket') ? (policy.burst ?? policy.limit) : policy.limit) as number;

/** The decision as the store would give it: `cached` only says who answered. */
function asStored({ cached, ...decision }: RateLimitDecision): RateLimitDecision {
  void cached;
  return decision;
}

interface Arms {
  withCache: RateLimiter;
  without: RateLimiter;
  /** How many of withCache's decisions went to its store. */
  sent(): number;
}

interface TraceCounts {
  decisions: number;
  denied: number;
  cached: number;
  probes: number;
}

async function runTrace(arms: Arms, clock: VirtualClock, seed: number, steps: number) {
  const next = seededRandom(seed);
  const fractional = seed % 5 === 0;
  const routes = routesOf(next);
  const clients = ['ann', 'ben', 'cat', 'dan'];
  const counts: TraceCounts = { decisions: 0, denied: 0, cached: 0, probes: 0 };
  /** The latest announced retry time per route and client: where a boundary lies. */
  const retries = new Map<string, number[]>();
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  let last: { route: number; key: string; cost: number } | undefined;
  for (let step = 0; step < steps; step++) {
    // Often the same request again (a client hammering a spent limit: where the cache
    // answers), else any route, mostly for one hot client.
    const again = last !== undefined && next() < 0.4;
    const route = again ? last!.route : Math.floor(next() * routes.length);
    const policies = routes[route];
    const key = again ? last!.key : next() < 0.5 ? 'ann' : pick(clients);
    const known = retries.get(`${route}:${key}`)?.filter((at) => at > clock.now);
    const roll = next();
    if (known && known.length > 0 && roll < 0.3) {
      const at = pick(known);
      counts.probes++;
      // Exactly at an announced retry time, or just before it.
      clock.set(roll < 0.15 || at - 1 <= clock.now ? at : at - 1);
    } else if (roll > 0.98) {
      await Promise.all([arms.withCache.reset(key, policies), arms.without.reset(key, policies)]);
      continue;
    } else {
      const gap = next() < 0.4 ? 0 : next() < 0.95 ? next() * 40 : next() * 3_000;
      clock.advance(fractional ? gap : Math.floor(gap));
    }
    const cost = again
      ? last!.cost
      : 1 + Math.floor(next() * Math.min(3, ...policies.map(capacity)));
    last = { route, key, cost };
    const mode = next() < 0.15 ? 'peek' : 'consume';
    const sentBefore = arms.sent();
    const seen = await arms.withCache[mode](key, policies, cost);
    const truth = await arms.without[mode](key, policies, cost);
    const fromCache = arms.sent() === sentBefore;
    expect({ step, fromCache: fromCache && seen.cached === true }).toEqual({
      step,
      fromCache,
    });
    expect({ step, now: clock.now, key, cost, mode, ...asStored(seen) }).toEqual({
      step,
      now: clock.now,
      key,
      cost,
      mode,
      ...truth,
    });
    counts.decisions++;
    if (fromCache) counts.cached++;
    if (!truth.allowed) {
      counts.denied++;
      retries.set(
        `${route}:${key}`,
        truth.results.filter((r) => !r.allowed).map((r) => clock.now + r.retryAfterMs),
      );
    }
  }
  return counts;
}

const report: string[] = [];
afterAll(() =>
  console.info(['seed | decisions | denied | retry-time probes | cached', ...report].join('\n')),
);

function expectTraceCovers(seed: number, counts: TraceCounts, steps: number) {
  report.push(
    `${seed} | ${counts.decisions} | ${counts.denied} | ${counts.probes} | ${counts.cached}`,
  );
  // Deterministic traces: they deny often, probe retry times, and the cache answers.
  expect(counts.denied).toBeGreaterThan(steps / 8);
  expect(counts.probes).toBeGreaterThan(steps / 60);
  expect(counts.cached).toBeGreaterThan(steps / 60);
}

async function armsOn(
  kind: 'memory' | 'redis',
  url: string | undefined,
  clock: VirtualClock,
  prefix: string,
): Promise<Arms & { close(): Promise<void> }> {
  const options: RateLimitModuleOptions = { clock: clock.read, timeout: 5_000, prefix };
  const withCache = await new LimiterFixture(kind, url, options).ready();
  const without = await new LimiterFixture(kind, url, {
    ...options,
    prefix: `${prefix}-ref`,
    denyCache: false,
  }).ready();
  let sent = 0;
  const decide = withCache.store.decide.bind(withCache.store);
  withCache.store.decide = (request) => {
    sent++;
    return decide(request);
  };
  return {
    withCache: withCache.limiter,
    without: without.limiter,
    sent: () => sent,
    close: async () => {
      await Promise.all([withCache.close(), without.close()]);
    },
  };
}

describe('deny cache on and off: identical decisions (embedded store)', () => {
  const seeds = Array.from({ length: 20 }, (_, i) => i + 1);
  it.each(seeds)('trace with seed %i', async (seed) => {
    const clock = new VirtualClock(1_700_000_000_000 + seed * 7_919);
    const arms = await armsOn('memory', undefined, clock, `m${seed}`);
    try {
      const steps = 1_500;
      expectTraceCovers(seed, await runTrace(arms, clock, seed, steps), steps);
    } finally {
      await arms.close();
    }
  });
});

const redisServer = useRedisServer();

describe('deny cache on and off: identical decisions (Redis)', () => {
  it.each([101, 102, 105])('trace with seed %i', async (seed) => {
    const clock = new VirtualClock(1_700_000_000_000 + seed * 7_919);
    const arms = await armsOn('redis', redisServer.server.url, clock, `r${seed}`);
    try {
      const steps = 600;
      expectTraceCovers(seed, await runTrace(arms, clock, seed, steps), steps);
    } finally {
      await arms.close();
    }
  });
});

describe('the hot key: one client hammering a spent limit at one cost', () => {
  const policies: [string, RateLimitPolicy][] = [
    ['token bucket 10/1 s', { algorithm: 'token-bucket', limit: 10, window: 1_000 }],
    ['token bucket 3/1 s', { algorithm: 'token-bucket', limit: 3, window: 1_000 }],
    ['leaky bucket 10/1 s', { algorithm: 'leaky-bucket', limit: 10, window: 1_000 }],
    ['fixed window 10/1 s', { algorithm: 'fixed-window', limit: 10, window: 1_000 }],
    ['sliding log 10/1 s', { algorithm: 'sliding-window-log', limit: 10, window: 1_000 }],
    ['sliding counter 10/1 s', { algorithm: 'sliding-window-counter', limit: 10, window: 1_000 }],
    ['sliding counter 3/1 s', { algorithm: 'sliding-window-counter', limit: 3, window: 1_000 }],
  ];
  const rates: string[] = [];
  afterAll(() => console.info(['hot key: denials answered by the cache', ...rates].join('\n')));

  it.each(policies)('%s', async (label, policy) => {
    for (const cost of [1, 2]) {
      const clock = new VirtualClock(1_700_000_000_000);
      const arms = await armsOn('memory', undefined, clock, 'hot');
      const next = seededRandom(cost);
      let denied = 0;
      let cached = 0;
      try {
        for (let i = 0; i < 2_500; i++) {
          // About three requests per millisecond.
          clock.advance(next() < 0.7 ? 0 : 1);
          const sentBefore = arms.sent();
          const seen = await arms.withCache.consume('hot', policy, cost);
          const truth = await arms.without.consume('hot', policy, cost);
          expect({ i, ...asStored(seen) }).toEqual({ i, ...truth });
          if (!truth.allowed) denied++;
          if (arms.sent() === sentBefore) cached++;
        }
      } finally {
        await arms.close();
      }
      rates.push(`${label}, cost ${cost}: ${((100 * cached) / denied).toFixed(1)}%`);
      expect(denied).toBeGreaterThan(1_500);
    }
  });
});
