import { ALGORITHMS, type Algorithm, type RateLimitPolicy } from '../../lib/index.js';
import { LimiterFixture, type StoreKind, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';

const BLOCK_MS = 3_000;
const policyFor = (algorithm: Algorithm): RateLimitPolicy => ({
  name: 'blocking',
  algorithm,
  limit: 4,
  window: 1_000,
  blockDuration: BLOCK_MS,
});

const redis = useRedisServer();

/** The README's table of what a block does per algorithm, on both stores, on a virtual clock. */
describe.each<StoreKind>(['redis', 'memory'])('blockDuration on the %s store', (kind) => {
  let fixture: LimiterFixture;
  const clock = new VirtualClock();
  beforeAll(async () => {
    fixture = await new LimiterFixture(kind, redis.server.url, {
      clock: clock.read,
      prefix: `blk-${kind}`,
    }).ready();
  });
  afterAll(() => fixture.close());

  it.each(ALGORITHMS)(
    '%s: denies every cost to the end of the block, charging nothing, then has its full budget',
    async (algorithm) => {
      const policy = policyFor(algorithm);
      const key = `${algorithm}-${kind}`;
      const { limiter } = fixture;
      // 3 of 4 spent; a cost of 2 is denied and starts the block, though a cost of 1 fits.
      expect((await limiter.consume(key, policy, 3)).allowed).toBe(true);
      const first = await limiter.consume(key, policy, 2);
      expect(first.allowed).toBe(false);
      expect(first.results[0]).toMatchObject({ remaining: 0, retryAfterMs: BLOCK_MS });
      clock.advance(BLOCK_MS - 1);
      // Long after the window (and any refill or drain) would admit, the block denies, and
      // extends nothing: 1 ms to go.
      for (const cost of [1, 2]) {
        const during = await limiter.consume(key, policy, cost);
        expect(during.allowed).toBe(false);
        expect(during.results[0].retryAfterMs).toBe(1);
      }
      clock.advance(1);
      // Nothing was charged during the block: the whole budget is back at its end.
      const after = await limiter.consume(key, policy, 4);
      expect(after.allowed).toBe(true);
      await limiter.reset(key, policy);
    },
  );

  /**
   * Limit 4 per second (a unit every 250 ms, burst 4), 3 spent at the start of a window, a
   * block of 500 ms: at its end the windows still count the 3 (1 left), the token bucket has
   * refilled 2 (3 left), the leaky bucket has drained 2 (a wait of 250 ms admits a cost of 3).
   */
  const leftAfterShortBlock: Record<Algorithm, number> = {
    'token-bucket': 3,
    'leaky-bucket': 3,
    'fixed-window': 1,
    'sliding-window-log': 1,
    'sliding-window-counter': 1,
  };

  it.each(ALGORITHMS)(
    '%s: a short block ends on the budget the algorithm holds then, not a fresh one',
    async (algorithm) => {
      const policy = { ...policyFor(algorithm), blockDuration: 500 };
      const key = `short-${algorithm}-${kind}`;
      const { limiter } = fixture;
      // The start of a window (windows are epoch-aligned), later than the clock has been.
      clock.set((Math.floor(clock.now / 60_000) + 1) * 60_000);
      expect((await limiter.consume(key, policy, 3)).allowed).toBe(true);
      expect((await limiter.consume(key, policy, 2)).allowed).toBe(false);
      clock.advance(499);
      expect((await limiter.peek(key, policy, 1)).allowed).toBe(false);
      clock.advance(1);
      const left = leftAfterShortBlock[algorithm];
      expect((await limiter.peek(key, policy, left)).allowed).toBe(true);
      expect((await limiter.peek(key, policy, left + 1)).allowed).toBe(false);
    },
  );

  it('leaky-bucket: a delayed request is admitted and starts no block', async () => {
    const policy = policyFor('leaky-bucket');
    const key = `delayed-${kind}`;
    const { limiter } = fixture;
    expect((await limiter.consume(key, policy)).results[0].delayMs).toBe(0);
    const delayed = await limiter.consume(key, policy);
    expect(delayed.allowed).toBe(true);
    expect(delayed.results[0].delayMs).toBe(250);
    // Two more fit in the queue (waits of 500 and 750 ms): no block holds them out.
    expect((await limiter.peek(key, policy, 2)).allowed).toBe(true);
  });

  it('starts no block for a cost beyond capacity, nor for a peek', async () => {
    const policy = policyFor('token-bucket');
    const key = `hopeless-${kind}`;
    const { limiter } = fixture;
    const hopeless = await limiter.consume(key, policy, 5);
    expect(hopeless.results[0].retryAfterMs).toBe(Infinity);
    expect((await limiter.consume(key, policy, 4)).allowed).toBe(true);
    expect((await limiter.peek(key, policy, 1)).allowed).toBe(false);
    clock.advance(250); // one token back
    expect((await limiter.consume(key, policy, 1)).allowed).toBe(true);
  });
});
