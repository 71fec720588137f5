import type { Algorithm } from '../../lib/index.js';
import { rateLimitHeaders } from '../../lib/guard/rate-limit-headers.js';
import { retryAfterOf } from '../../lib/guard/denial-message.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';

/**
 * The example column of docs/responses.md, "What `t` and `Retry-After` mean": limit 4 per
 * 60 s, five requests 10 s into a window; the fifth's `t` (RateLimit header) and Retry-After.
 */
const TABLE: [Algorithm, number, number][] = [
  ['token-bucket', 60, 15],
  ['leaky-bucket', 60, 15],
  ['fixed-window', 50, 50],
  ['sliding-window-log', 60, 60],
  // Up to twice the window: the current window's count weighs until the next one ends.
  ['sliding-window-counter', 110, 65],
];

describe('t and Retry-After, as docs/responses.md tabulates them', () => {
  it.each(TABLE)('%s: t=%i, Retry-After %i', async (algorithm, t, retryAfter) => {
    const clock = new VirtualClock(1_800_000_000_000 - (1_800_000_000_000 % 60_000) + 10_000);
    const fixture = new LimiterFixture('memory', undefined, { clock: clock.read });
    try {
      const policy = { algorithm, limit: 4, window: 60_000 };
      for (let i = 0; i < 4; i++) {
        expect((await fixture.limiter.consume('client', policy)).allowed).toBe(true);
      }
      const denied = await fixture.limiter.consume('client', policy);
      expect(denied.allowed).toBe(false);
      expect(rateLimitHeaders(denied, 'ietf').RateLimit).toBe(`"default";r=0;t=${t}`);
      expect(retryAfterOf(denied)).toBe(retryAfter);
    } finally {
      await fixture.close();
    }
  });
});
