import type {
  Algorithm,
  RateLimitPolicy,
} from '../../lib/interfaces/rate-limit-policy.interface.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { seededRandom } from '../support/seeded-random.js';

/**
 * A pod alone with its budget loses nothing to leases: what it holds counts towards every
 * request, so it denies exactly when exact mode would. Random traces (limits, lease sizes,
 * costs above and below the lease, peeks, time across windows) on a virtual clock, a leasing
 * pod against an exact one on the same Redis: the same verdicts, and for the fixed window the
 * same remaining, resetMs and retryAfterMs.
 */
const redis = useRedisServer();
const WINDOW = 1_000;
const ALGORITHMS: readonly Algorithm[] = ['fixed-window', 'sliding-window-counter'];

describe.each(ALGORITHMS)('%s', (algorithm) => {
  it.each([1, 2, 3, 4, 5, 6])(
    'seed %d: a leasing pod alone decides as exact mode',
    async (seed) => {
      const random = seededRandom(seed);
      const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
      const clock = new VirtualClock(WINDOW * 1_000_000 + int(0, WINDOW - 1));
      const limit = int(5, 60);
      const lease = int(1, limit);
      const exact: RateLimitPolicy = { name: 'd', algorithm, limit, window: WINDOW };
      const leased: RateLimitPolicy = { ...exact, lease };
      const pods = await Promise.all(
        ['exact', 'leased'].map((prefix) =>
          new LimiterFixture('redis', redis.server.url, { clock: clock.read, prefix }).ready(),
        ),
      );
      try {
        for (let step = 0; step < 300; step++) {
          const cost = int(1, Math.min(limit, lease + 2));
          const peek = random() < 0.2;
          const [want, got] = await Promise.all(
            [exact, leased].map((policy, i) =>
              peek
                ? pods[i].limiter.peek('k', policy, cost)
                : pods[i].limiter.consume('k', policy, cost),
            ),
          );
          const context = `step ${step}: ${peek ? 'peek' : 'consume'} ${cost}`;
          expect({ context, allowed: got.allowed }).toEqual({ context, allowed: want.allowed });
          if (algorithm === 'fixed-window') {
            const fields = ({ remaining, resetMs, retryAfterMs }: (typeof want.results)[0]) => ({
              context,
              remaining,
              resetMs,
              retryAfterMs,
            });
            expect(fields(got.results[0])).toEqual(fields(want.results[0]));
          }
          clock.advance(random() < 0.5 ? 0 : int(0, WINDOW / 3));
        }
      } finally {
        await Promise.all(pods.map((pod) => pod.limiter.onApplicationShutdown()));
        await Promise.all(pods.map((pod) => pod.close()));
        await redis.admin.flushall();
      }
    },
  );
});
