import { setTimeout as sleep } from 'node:timers/promises';
import type {
  Algorithm,
  RateLimitPolicy,
} from '../../lib/interfaces/rate-limit-policy.interface.js';
import type { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { LimiterFixture, type StoreKind, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * What becomes of a client's state when its limit changes (limits per request, e.g. an
 * upgrade mid-window), per algorithm, on both stores: the README's table, step by step.
 * The budget is one key whatever the limit (name and algorithm make the key), so each step
 * decides the same state under the limit of that moment. Window 1 s; times from an
 * aligned start.
 */

const redis = useRedisServer();

/** One request: at `at` ms, under limit (and burst), and what the policy answers. */
type Step = [
  at: number,
  limit: number,
  burst: number | undefined,
  expected: { allowed: boolean; remaining: number; retryAfterMs?: number; delayMs?: number },
];

const SCENARIOS: Record<Algorithm, Step[]> = {
  // The window's count is kept; the new limit applies to it at once.
  'fixed-window': [
    [0, 4, undefined, { allowed: true, remaining: 3 }],
    [0, 4, undefined, { allowed: true, remaining: 2 }],
    [0, 4, undefined, { allowed: true, remaining: 1 }],
    // upgraded: 8 - 4 counted
    [100, 8, undefined, { allowed: true, remaining: 4 }],
    // downgraded below the count: denied until the window ends
    [200, 2, undefined, { allowed: false, remaining: 0, retryAfterMs: 800 }],
    [1_000, 2, undefined, { allowed: true, remaining: 1 }],
  ],
  // The log of admitted requests is kept; the new limit applies to the last window at once.
  'sliding-window-log': [
    [0, 4, undefined, { allowed: true, remaining: 3 }],
    [100, 4, undefined, { allowed: true, remaining: 2 }],
    [200, 4, undefined, { allowed: true, remaining: 1 }],
    [300, 8, undefined, { allowed: true, remaining: 4 }],
    // 4 logged, room for 1 under 2 once the 3 oldest (0, 100, 200) have aged out
    [400, 2, undefined, { allowed: false, remaining: 0, retryAfterMs: 800 }],
    [1_200, 2, undefined, { allowed: true, remaining: 0 }],
  ],
  // Both windows' counts are kept; the estimate is held to the new limit at once.
  'sliding-window-counter': [
    [0, 4, undefined, { allowed: true, remaining: 3 }],
    [0, 4, undefined, { allowed: true, remaining: 2 }],
    [0, 4, undefined, { allowed: true, remaining: 1 }],
    [0, 8, undefined, { allowed: true, remaining: 4 }],
    // next window, half way: estimate 4 * 0.5 = 2
    [1_500, 2, undefined, { allowed: false, remaining: 0, retryAfterMs: 250 }],
    [1_500, 8, undefined, { allowed: true, remaining: 5 }],
  ],
  // Tokens are kept; the time since the last request refills at the new rate, up to the
  // new burst (a smaller burst cuts the tokens down to it).
  'token-bucket': [
    [0, 4, undefined, { allowed: true, remaining: 3 }],
    [0, 4, undefined, { allowed: true, remaining: 2 }],
    [0, 4, undefined, { allowed: true, remaining: 1 }],
    [0, 4, undefined, { allowed: true, remaining: 0 }],
    // 250 ms at 8 per second: 2 tokens (the old rate would have given 1)
    [250, 8, undefined, { allowed: true, remaining: 1 }],
    // 750 ms more at 8 per second: 7 tokens
    [1_000, 8, undefined, { allowed: true, remaining: 6 }],
    // 6 tokens, cut to the new burst of 3
    [1_000, 2, 3, { allowed: true, remaining: 2 }],
    // 500 ms at 2 per second: 1 token more
    [1_500, 2, 3, { allowed: true, remaining: 2 }],
  ],
  // The backlog is kept as time (when the queue is free again): requests already admitted
  // keep their start times, and a new one is admitted iff the backlog is at most
  // (burst - cost) * I under the new interval I = window / limit.
  'leaky-bucket': [
    [0, 2, undefined, { allowed: true, remaining: 1, delayMs: 0 }],
    [0, 2, undefined, { allowed: true, remaining: 0, delayMs: 500 }],
    // backlog 1000 ms; I = 500: room for a wait of 500
    [0, 2, undefined, { allowed: false, remaining: 0, retryAfterMs: 500 }],
    // I = 250: room for a wait of 750
    [0, 4, undefined, { allowed: false, remaining: 0, retryAfterMs: 250 }],
    [250, 4, undefined, { allowed: true, remaining: 0, delayMs: 750 }],
    // backlog 1000 ms again; burst 1 leaves room for no wait at all
    [250, 1, undefined, { allowed: false, remaining: 0, retryAfterMs: 1_000 }],
  ],
};

describe.each<StoreKind>(['redis', 'memory'])(
  'a client whose limit changes, on the %s store',
  (kind) => {
    let fixture: LimiterFixture;
    beforeAll(async () => {
      fixture = await new LimiterFixture(kind, redis.server.url).ready();
    });
    afterAll(() => fixture.close());

    const policyFor = (algorithm: Algorithm, limit: number, burst: number | undefined) =>
      ({ name: 'plan', algorithm, limit, burst, window: 1_000 }) satisfies RateLimitPolicy;

    it.each(Object.keys(SCENARIOS) as Algorithm[])('%s', async (algorithm) => {
      const clock = new VirtualClock(1_700_000_000_000);
      const limiter: RateLimiter = fixture.limiter.withClock(clock.read);
      const key = `limit-change-${algorithm}-${Date.now()}`;
      const start = clock.now;
      const seen = [];
      for (const [at, limit, burst] of SCENARIOS[algorithm]) {
        clock.set(start + at);
        const { results } = await limiter.consume(key, policyFor(algorithm, limit, burst));
        const { allowed, remaining, retryAfterMs, delayMs } = results[0];
        expect(results[0].limit).toBe(limit);
        seen.push({
          allowed,
          remaining,
          ...(retryAfterMs > 0 && { retryAfterMs }),
          ...(delayMs > 0 && { delayMs }),
        });
      }
      expect(seen).toEqual(
        SCENARIOS[algorithm].map(([, , , { allowed, remaining, retryAfterMs, delayMs }]) => ({
          allowed,
          remaining,
          ...(retryAfterMs && { retryAfterMs }),
          ...(delayMs && { delayMs }),
        })),
      );
    });

    it('token bucket: a bucket that had refilled under the old limit (its key expired) starts full at the new burst', async () => {
      // Real time: expiry is. Limit 10 per second, so 10 tokens spent refill within 1 s,
      // and the key lives that long.
      const key = `limit-change-expired-${Date.now()}`;
      const fast = {
        name: 'plan',
        algorithm: 'token-bucket',
        limit: 10,
        burst: 10,
        window: 1_000,
      } as const;
      for (let i = 0; i < 10; i++) await fixture.limiter.consume(key, fast);
      await sleep(1_500);
      // At the new rate, 1 per second, 1.5 s would have brought 1.5 tokens back; the state
      // is gone, so the client has the whole new burst.
      const slow = { ...fast, limit: 1 };
      const { results } = await fixture.limiter.consume(key, slow);
      expect([results[0].allowed, results[0].remaining]).toEqual([true, 9]);
    });
  },
);
