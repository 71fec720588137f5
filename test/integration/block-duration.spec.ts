import { ALGORITHMS, type Algorithm, type RateLimitPolicy } from '../../lib/index.js';
import { LimiterFixture, type StoreKind, VirtualClock } from '../support/limiters.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

const BLOCK_MS = 3_000;
const policyFor = (algorithm: Algorithm): RateLimitPolicy => ({
  name: 'blocking',
  algorithm,
  limit: 4,
  window: 1_000,
  blockDuration: BLOCK_MS,
});

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(() => server.stop());

/** The README's table of what a block does per algorithm, on both stores, on a virtual clock. */
describe.each<StoreKind>(['redis', 'memory'])('blockDuration on the %s store', (kind) => {
  let fixture: LimiterFixture;
  const clock = new VirtualClock();
  beforeAll(async () => {
    fixture = await new LimiterFixture(kind, server.url, {
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
