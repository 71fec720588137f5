import { ALGORITHMS, type RateLimitPolicy } from '../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';

/**
 * retryAfterMs promises the earliest time the same request passes. On a millisecond clock
 * (Redis TIME, Date.now) that means: denied a little before, admitted at ceil(retryAfterMs).
 * Checked with peek, which charges nothing, over many denials of random traffic. (The
 * embedded store decides exactly as the scripts do: see differential.spec.ts.)
 */
const SHAPES = [
  { limit: 1, window: 700, burst: 2 },
  { limit: 3, window: 700, burst: 4 },
  { limit: 7, window: 1_000, burst: 3 },
];

describe.each(ALGORITHMS)('%s retryAfterMs', (algorithm) => {
  it.each(SHAPES)(
    'admits a denied request at ceil(retryAfterMs), not before: %o',
    async (shape) => {
      const clock = new VirtualClock();
      const fixture = new LimiterFixture('memory', undefined, { clock: clock.read });
      const policy: RateLimitPolicy = { algorithm, ...shape };
      let seed = 7;
      const next = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
      let denials = 0;
      for (let step = 0; step < 2_000; step++) {
        clock.advance(Math.floor(next() * 400));
        const cost = 1 + Math.floor(next() * Math.min(2, shape.limit));
        const decision = await fixture.limiter.consume('k', policy, cost);
        if (decision.allowed) continue;
        denials++;
        const retry = Math.ceil(decision.results[0].retryAfterMs);
        const base = clock.now;
        if (retry >= 2) {
          clock.set(base + retry - 2);
          expect((await fixture.limiter.peek('k', policy, cost)).allowed).toBe(false);
        }
        clock.set(base + retry);
        expect({ step, allowed: (await fixture.limiter.peek('k', policy, cost)).allowed }).toEqual({
          step,
          allowed: true,
        });
        clock.set(base);
      }
      expect(denials).toBeGreaterThan(100);
      await fixture.close();
    },
  );
});
