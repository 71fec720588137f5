import {
  ALGORITHMS,
  type RateLimitDecision,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { seededRandom } from '../support/seeded-random.js';
import { type RedisServer, startRedisServer, untilWindowHasRoom } from '../support/redis-server.js';

/**
 * The deny cache answers known denials without Redis. It must be exact: across pods on
 * one Redis, it never denies a request that Redis would admit (and never admits: every
 * admission is Redis's own).
 */
let server: RedisServer;
const fixtures: LimiterFixture[] = [];
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await Promise.all(fixtures.map((fixture) => fixture.close()));
  await server.stop();
});

/** A RateLimiter (one "pod") on the shared Redis, counting the decisions it sends there. */
async function pod(options: RateLimitModuleOptions) {
  const fixture = await new LimiterFixture('redis', server.url, options).ready();
  fixtures.push(fixture);
  const counted = { sent: 0, limiter: fixture.limiter };
  const decide = fixture.store.decide.bind(fixture.store);
  fixture.store.decide = (request) => {
    counted.sent++;
    return decide(request);
  };
  return counted;
}

// Numeric limits only here: functions are for the guard.
const capacity = (policy: RateLimitPolicy) =>
  (policy.algorithm?.endsWith('bucket') ? (policy.burst ?? policy.limit) : policy.limit) as number;

describe('two pods with deny caches on one Redis, against a reference without', () => {
  const routes: RateLimitPolicy[][] = [
    ...ALGORITHMS.map((algorithm) => [
      { algorithm, limit: 3, window: 1_000, burst: algorithm === 'token-bucket' ? 4 : undefined },
    ]),
    [
      { name: 'second', algorithm: 'token-bucket', limit: 2, window: 500, burst: 3 },
      { name: 'minute', algorithm: 'fixed-window', limit: 6, window: 3_000 },
    ],
    [
      { name: 'log', algorithm: 'sliding-window-log', limit: 4, window: 800 },
      { name: 'queue', algorithm: 'leaky-bucket', limit: 5, window: 1_000, burst: 2 },
    ],
    // A block holds a denial past the window's end.
    [{ name: 'blocked', algorithm: 'fixed-window', limit: 2, window: 300, blockDuration: 1_000 }],
  ];

  it.each([1, 2, 3])(
    'virtual clock, seed %i: every decision is the reference one, to the boundary',
    async (seed) => {
      const clock = new VirtualClock(1_700_000_000_000 + seed * 1_000);
      const shared = { clock: clock.read, prefix: `dc${seed}` };
      const pods = [await pod(shared), await pod(shared)];
      const reference = await pod({ ...shared, prefix: `ref${seed}`, denyCache: false });
      const next = seededRandom(seed);
      const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
      /** The latest denial's end, per route and client: where a boundary can be probed. */
      const ends = new Map<string, number>();
      let cached = 0;
      let boundaries = 0;
      let denied = 0;
      const steps = 700;
      for (let step = 0; step < steps; step++) {
        const route = Math.floor(next() * routes.length);
        const key = pick(['ann', 'ben']);
        const end = ends.get(`${route}:${key}`);
        const roll = next();
        if (end !== undefined && end > clock.now && roll < 0.15) {
          boundaries++;
          clock.set(end); // exactly when the denial ends: Redis admits, the cache must not deny
        } else if (end !== undefined && end > clock.now + 1 && roll < 0.25) {
          clock.set(end - 1);
        } else {
          clock.advance(next() < 0.4 ? 0 : Math.floor(next() * 30));
        }
        const policies = routes[route];
        const cost = 1 + Math.floor(next() * Math.min(3, ...policies.map(capacity)));
        const mode = next() < 0.15 ? 'peek' : 'consume';
        const chosen = pick(pods);
        const sentBefore = chosen.sent;
        const [seen, truth]: RateLimitDecision[] = [
          await chosen.limiter[mode](key, policies, cost),
          await reference.limiter[mode](key, policies, cost),
        ];
        const fromCache = chosen.sent === sentBefore;
        if (fromCache) cached++;
        expect({ step, fromCache, allowed: seen.allowed }).toEqual({
          step,
          fromCache,
          allowed: truth.allowed,
        });
        seen.results.forEach((result, i) => {
          // A policy the cache calls denying denies; its retry is never later than Redis's
          // (but for the last bits of a double: the cache counts down by subtraction).
          if (!result.allowed)
            expect({ step, i, allowed: truth.results[i].allowed }).toEqual({
              step,
              i,
              allowed: false,
            });
          expect(result.retryAfterMs).toBeLessThanOrEqual(truth.results[i].retryAfterMs + 1e-9);
        });
        if (!fromCache) expect(seen).toEqual(truth);
        if (!truth.allowed) {
          denied++;
          const retry = Math.max(...truth.results.map((r) => r.retryAfterMs));
          ends.set(`${route}:${key}`, clock.now + retry);
        }
      }
      // The trace is deterministic: it denies often, probes many boundaries, and the cache
      // answers some denials (few: only the same request again, on budgets its own pod has
      // not charged since; the other pod's requests are asked of Redis).
      expect(denied).toBeGreaterThan(steps / 4);
      expect(boundaries).toBeGreaterThan(20);
      expect(cached).toBeGreaterThan(2);
    },
  );

  it.each(ALGORITHMS)(
    "Redis's clock, %s: while Redis would admit, the cached pod admits",
    async (algorithm) => {
      const policy: RateLimitPolicy = { algorithm, limit: 2, window: 120, burst: 1 };
      const shared = { prefix: `dcr-${algorithm}` };
      const [cachedPod, otherPod] = [await pod(shared), await pod(shared)];
      const reference = await pod({ ...shared, denyCache: false });
      const next = seededRandom(7);
      const key = 'client';
      let denials = 0;
      let fromCache = 0;
      const started = performance.now();
      while (performance.now() - started < 700) {
        if (next() < 0.2) {
          await otherPod.limiter.consume(key, policy);
          continue;
        }
        // Redis's verdict now, then the cached pod's right after: time only moved on,
        // which can only turn a denial into an admission, never the other way.
        const truth = await reference.limiter.peek(key, policy);
        const sentBefore = cachedPod.sent;
        const seen = await cachedPod.limiter.consume(key, policy);
        if (!seen.allowed) denials++;
        if (cachedPod.sent === sentBefore) fromCache++;
        if (truth.allowed) expect(seen.allowed).toBe(true);
      }
      expect(denials).toBeGreaterThan(5);
      expect(fromCache).toBeGreaterThan(5);
    },
  );
});

describe('deny cache lifecycle', () => {
  const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 1, window: '1m' };

  it("reset() clears this pod's entries; another pod denies until the end it knows", async () => {
    const shared = { prefix: 'dc-reset' };
    const [a, b] = [await pod(shared), await pod(shared)];
    // One fixed window on Redis's clock throughout: a new one would admit, and end the
    // denials the caches know.
    await untilWindowHasRoom(server, 60_000);
    expect((await a.limiter.consume('k', policy)).allowed).toBe(true);
    expect((await a.limiter.consume('k', policy)).allowed).toBe(false);
    expect((await b.limiter.consume('k', policy)).allowed).toBe(false);
    const [sentA, sentB] = [a.sent, b.sent];
    expect((await a.limiter.consume('k', policy)).allowed).toBe(false);
    expect((await b.limiter.consume('k', policy)).allowed).toBe(false);
    expect([a.sent, b.sent]).toEqual([sentA, sentB]);

    await a.limiter.reset('k', policy);
    expect((await a.limiter.consume('k', policy)).allowed).toBe(true);
    expect(a.sent).toBe(sentA + 1);
    // b never heard of the reset: it keeps answering its known denial without Redis.
    expect((await b.limiter.consume('k', policy)).allowed).toBe(false);
    expect(b.sent).toBe(sentB);
  });

  it('answers a known denial with the same results, counted down', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const a = await pod({ prefix: 'dc-count', clock: clock.read });
    const bucket: RateLimitPolicy = { algorithm: 'token-bucket', limit: 1, window: '10s' };
    await a.limiter.consume('k', bucket);
    const first = await a.limiter.consume('k', bucket);
    clock.advance(2_500);
    const later = await a.limiter.consume('k', bucket);
    expect(a.sent).toBe(2);
    expect(first.cached).toBeUndefined();
    expect(later).toEqual({
      allowed: false,
      cached: true,
      results: [
        {
          ...first.results[0],
          resetMs: first.results[0].resetMs - 2_500,
          retryAfterMs: first.results[0].retryAfterMs - 2_500,
        },
      ],
    });
    expect(first.results[0].retryAfterMs).toBe(10_000);
  });

  it.each<[string, RateLimitModuleOptions]>([
    ['dryRun', { dryRun: true }],
    ['denyCache: false', { denyCache: false }],
  ])('%s: every decision goes to Redis', async (label, options) => {
    const a = await pod({ prefix: `dc-off-${label.length}`, ...options });
    for (let i = 0; i < 5; i++) await a.limiter.consume('k', policy);
    expect(a.sent).toBe(5);
  });

  it("never keeps failureMode 'local' denials: only the store's own hold", async () => {
    const own = await startRedisServer();
    const fixture = await new LimiterFixture('redis', own.url, {
      failureMode: 'local',
      instances: 10, // a local share of 1
      breaker: false,
      timeout: 100,
    }).ready();
    try {
      const tenth: RateLimitPolicy = { algorithm: 'fixed-window', limit: 10, window: '1m' };
      // The local share's two decisions in one window (Redis's clock and the local one are
      // this machine's).
      await untilWindowHasRoom(fixture.client!, 60_000);
      expect((await fixture.limiter.consume('k', tenth)).allowed).toBe(true);
      const paused = own.pause(800);
      await paused;
      const local = [
        await fixture.limiter.consume('k', tenth),
        await fixture.limiter.consume('k', tenth),
      ];
      expect(local.map((decision) => decision.allowed)).toEqual([true, false]);
      await new Promise((resolve) => setTimeout(resolve, 900));
      // Redis, back, has 1 of 10 spent: it admits, whatever the local share said.
      expect((await fixture.limiter.consume('k', tenth)).allowed).toBe(true);
    } finally {
      await fixture.close();
      await own.stop();
    }
  });

  it('holds at most maxEntries, the oldest out first', async () => {
    const a = await pod({ prefix: 'dc-cap', denyCache: { maxEntries: 2 } });
    // The remembered denials last to the window's end on Redis's clock: past it, all ask Redis.
    await untilWindowHasRoom(server, 60_000);
    for (const key of ['x', 'y', 'z']) {
      await a.limiter.consume(key, policy);
      await a.limiter.consume(key, policy); // denied: remembered
    }
    const sent = a.sent;
    await a.limiter.consume('z', policy);
    await a.limiter.consume('y', policy);
    expect(a.sent).toBe(sent);
    await a.limiter.consume('x', policy); // evicted: asks Redis
    expect(a.sent).toBe(sent + 1);
  });
});
