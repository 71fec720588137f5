import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { LimiterFixture, type StoreKind, storeKindsOn, VirtualClock } from '../support/limiters.js';
import { describeOnServers, useRedisServer } from '../support/redis-fixture.js';
import type { ServerKind } from '../support/server-kinds.js';

/**
 * Each algorithm's exact contract, on a virtual clock, against a real redis-server through
 * every client library the package supports ('redis' is ioredis 6), against a valkey-server
 * through ioredis and iovalkey, and against the embedded store: all must give these very
 * numbers.
 */
describe.each<StoreKind>(['memory', ...storeKindsOn('redis')])('%s store', (kind) =>
  algorithmContracts(kind, 'redis'),
);
describeOnServers(
  (server) =>
    describe.each(storeKindsOn(server))('%s store', (kind) => algorithmContracts(kind, server)),
  ['valkey'],
);

/** The contracts on `kind`'s store; a Redis store's on a server of `server`'s kind. */
function algorithmContracts(kind: StoreKind, server: ServerKind): void {
  // Started in the Redis runs only: Jest runs no hook of a block whose tests are all filtered
  // out, and the mutation runs take the memory half alone (jest.mutation.config.js).
  const redis = kind === 'memory' ? undefined : useRedisServer({ server });
  const clock = new VirtualClock();
  let fixture: LimiterFixture;
  let keySeq = 0;
  let key: string;
  const start = 1_700_000_000_000; // a multiple of every window below

  // A fixture per test (not once in beforeAll), so mutation testing can tell which tests
  // cover which code.
  beforeEach(async () => {
    fixture = await new LimiterFixture(kind, redis?.server.url, { clock: clock.read }).ready();
  });
  afterEach(() => fixture.close());
  beforeEach(() => {
    clock.set(start);
    key = `client-${kind}-${++keySeq}`;
  });

  const consume = (policy: RateLimitPolicy | RateLimitPolicy[], cost?: number) =>
    fixture.limiter.consume(key, policy, cost);
  const admittedOf = async (policy: RateLimitPolicy, count: number) => {
    let admitted = 0;
    for (let i = 0; i < count; i++) if ((await consume(policy)).allowed) admitted++;
    return admitted;
  };

  describe('token bucket', () => {
    const policy: RateLimitPolicy = {
      algorithm: 'token-bucket',
      limit: 10,
      window: '10s',
      burst: 5,
    };

    it('admits a burst of `burst`, then refills one token per window/limit, keeping fractions', async () => {
      expect(await admittedOf(policy, 6)).toBe(5);
      clock.advance(500);
      const half = await consume(policy);
      expect(half.allowed).toBe(false);
      expect(half.results[0].retryAfterMs).toBe(500);
      clock.advance(500);
      expect((await consume(policy)).allowed).toBe(true);
      clock.advance(1_500);
      const after = await consume(policy);
      expect(after.results[0]).toMatchObject({ allowed: true, remaining: 0, resetMs: 4_500 });
      const denied = await consume(policy);
      expect(denied.results[0].retryAfterMs).toBe(500);
    });

    it('admits exactly at the retry time it announced, with no drift in the refill', async () => {
      const drifty: RateLimitPolicy = {
        algorithm: 'token-bucket',
        limit: 1,
        window: 700,
        burst: 2,
      };
      for (const at of [0, 700, 700, 1_656]) {
        clock.set(start + at);
        await consume(drifty);
      }
      clock.set(start + 1_861);
      const denied = await consume(drifty);
      expect(denied.allowed).toBe(false);
      clock.set(start + 1_861 + Math.ceil(denied.results[0].retryAfterMs));
      expect((await consume(drifty)).allowed).toBe(true);
    });

    it('charges a cost only when that many tokens are present', async () => {
      expect((await consume(policy, 3)).results[0].remaining).toBe(2);
      const denied = await consume(policy, 3);
      expect(denied.allowed).toBe(false);
      expect(denied.results[0]).toMatchObject({ remaining: 2, retryAfterMs: 1_000 });
      clock.advance(1_000);
      expect((await consume(policy, 3)).results[0].remaining).toBe(0);
    });
  });

  describe('leaky bucket', () => {
    const policy: RateLimitPolicy = { algorithm: 'leaky-bucket', limit: 5, window: '5s', burst: 3 };

    it('admits `burst` arriving together, one interval apart, then denies until I has passed', async () => {
      const delays = [];
      for (let i = 0; i < 3; i++) delays.push((await consume(policy)).results[0].delayMs);
      expect(delays).toEqual([0, 1_000, 2_000]);
      const full = await consume(policy);
      expect(full.allowed).toBe(false);
      expect(full.results[0]).toMatchObject({
        delayMs: 0,
        remaining: 0,
        resetMs: 3_000,
        retryAfterMs: 1_000,
      });
      clock.advance(999);
      expect((await consume(policy)).allowed).toBe(false);
      clock.advance(1);
      expect((await consume(policy)).results[0]).toMatchObject({ allowed: true, delayMs: 2_000 });
    });

    it('admits exactly `burst` of a burst of sequential consumes', async () => {
      const five: RateLimitPolicy = { algorithm: 'leaky-bucket', limit: 5, window: '5s', burst: 5 };
      expect(await admittedOf(five, 8)).toBe(5);
      clock.advance(1);
      expect((await consume(five)).allowed).toBe(false);
    });

    it('lets a cost-c request occupy c slots of the queue', async () => {
      expect((await consume(policy, 2)).results[0]).toMatchObject({ delayMs: 0, remaining: 1 });
      const denied = await consume(policy, 2);
      expect(denied.allowed).toBe(false);
      // Admission needs a wait of at most (burst - c) * I = 1 s; the queue holds 2 s.
      expect(denied.results[0]).toMatchObject({ remaining: 1, retryAfterMs: 1_000 });
      expect((await consume(policy, 1)).results[0]).toMatchObject({
        allowed: true,
        delayMs: 2_000,
      });
      clock.advance(2_000);
      expect((await consume(policy, 2)).results[0]).toMatchObject({
        allowed: true,
        delayMs: 1_000,
      });
    });
  });

  describe('fixed window', () => {
    const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 3, window: 1_000 };

    it('counts per epoch-aligned window, so a boundary lets twice the limit through', async () => {
      clock.set(start + 990);
      expect(await admittedOf(policy, 4)).toBe(3);
      const denied = await consume(policy);
      expect(denied.results[0]).toMatchObject({ retryAfterMs: 10, resetMs: 10, remaining: 0 });
      clock.set(start + 1_000);
      expect(await admittedOf(policy, 4)).toBe(3);
    });

    it('admits a cost iff it fits in what is left of the window', async () => {
      expect((await consume(policy, 2)).allowed).toBe(true);
      expect((await consume(policy, 2)).allowed).toBe(false);
      expect((await consume(policy, 1)).results[0].remaining).toBe(0);
    });
  });

  describe('sliding window log', () => {
    const policy: RateLimitPolicy = { algorithm: 'sliding-window-log', limit: 3, window: 1_000 };

    it('admits exactly `limit` in any window, with an exact retry time', async () => {
      for (const at of [0, 100, 200]) {
        clock.set(start + at);
        expect((await consume(policy)).allowed).toBe(true);
      }
      clock.set(start + 300);
      expect((await consume(policy)).results[0]).toMatchObject({
        allowed: false,
        retryAfterMs: 700,
      });
      clock.set(start + 999);
      expect((await consume(policy)).allowed).toBe(false);
      clock.set(start + 1_000);
      expect((await consume(policy)).results[0]).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('closes the fixed window boundary leak', async () => {
      clock.set(start + 990);
      expect(await admittedOf(policy, 3)).toBe(3);
      clock.set(start + 1_000);
      expect(await admittedOf(policy, 3)).toBe(0);
    });

    it('keeps one entry per admitted unit, unique within one millisecond, none for denials', async () => {
      expect((await consume(policy, 2)).allowed).toBe(true);
      expect(await admittedOf(policy, 5)).toBe(1);
      if (fixture.client) {
        const [stored] = await fixture.client.keys(`rl:{${key}}:*`);
        expect(await fixture.client.zcard(stored)).toBe(3);
      }
    });
  });

  describe('sliding window counter', () => {
    const policy: RateLimitPolicy = {
      algorithm: 'sliding-window-counter',
      limit: 10,
      window: 1_000,
    };

    it('weighs the previous window by how much of it still overlaps', async () => {
      clock.set(start + 500);
      expect(await admittedOf(policy, 12)).toBe(10);
      clock.set(start + 1_000);
      const denied = await consume(policy);
      expect(denied.results[0]).toMatchObject({ allowed: false, retryAfterMs: 100, remaining: 0 });
      clock.set(start + 1_099);
      expect((await consume(policy)).allowed).toBe(false);
      clock.set(start + 1_100);
      expect((await consume(policy)).allowed).toBe(true);
      clock.set(start + 1_500);
      // 10 * 0.5 + 1 = 6 in use: 4 more fit, unrounded.
      expect(await admittedOf(policy, 6)).toBe(4);
    });

    it('waits into the next window when the current one alone is over', async () => {
      clock.set(start + 900);
      expect((await consume(policy, 10)).allowed).toBe(true);
      const denied = await consume(policy, 5);
      // Next window at +1000 weighs this one fully, then it fades: 10 * (1 - e) + 5 <= 10 at e = 0.5.
      expect(denied.results[0].retryAfterMs).toBe(100 + 500);
    });
  });

  describe('several policies on one request', () => {
    const perSecond: RateLimitPolicy = {
      name: 'second',
      algorithm: 'fixed-window',
      limit: 5,
      window: 1_000,
    };
    const strict: RateLimitPolicy = {
      name: 'strict',
      algorithm: 'sliding-window-log',
      limit: 2,
      window: 1_000,
    };

    it('admits only what every policy admits and charges none on a denial', async () => {
      for (let i = 0; i < 2; i++) expect((await consume([perSecond, strict])).allowed).toBe(true);
      const denied = await consume([perSecond, strict]);
      expect(denied.allowed).toBe(false);
      expect(denied.results.map((r) => [r.policy, r.allowed])).toEqual([
        ['second', true],
        ['strict', false],
      ]);
      expect((await fixture.limiter.peek(key, perSecond)).results[0].remaining).toBe(3);
    });
  });

  describe('service', () => {
    const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 2, window: 1_000 };

    it('peek consumes nothing and reset forgets the budget', async () => {
      expect((await fixture.limiter.peek(key, policy, 2)).allowed).toBe(true);
      expect((await consume(policy, 2)).allowed).toBe(true);
      expect((await fixture.limiter.peek(key, policy, 1)).allowed).toBe(false);
      await fixture.limiter.reset(key, policy);
      expect(await admittedOf(policy, 3)).toBe(2);
      expect((await fixture.limiter.peek(key, policy)).allowed).toBe(false);
      await fixture.limiter.reset(key, policy);
      expect((await fixture.limiter.peek(key, policy)).results[0].remaining).toBe(2);
    });

    it('refuses malformed costs (400) and denies costs no budget can hold, never charging', async () => {
      await expect(consume(policy, 1.5)).rejects.toMatchObject({ status: 400 });
      await expect(consume(policy, 0)).rejects.toMatchObject({ status: 400 });
      const denied = await consume(policy, 3);
      expect(denied.allowed).toBe(false);
      expect(denied.results[0]).toMatchObject({
        allowed: false,
        remaining: 2,
        capacity: 2,
        retryAfterMs: Infinity,
      });
      expect((await fixture.limiter.peek(key, policy)).results[0].remaining).toBe(2);
    });

    it('reports the other policies of an impossible request as they stand, charging none', async () => {
      const roomy: RateLimitPolicy = { name: 'roomy', limit: 5, window: 1_000 };
      expect((await consume(roomy, 1)).allowed).toBe(true);
      const denied = await fixture.limiter.consume(key, [policy, roomy], 3);
      expect(denied.allowed).toBe(false);
      expect(
        denied.results.map(({ allowed, remaining, retryAfterMs }) => ({
          allowed,
          remaining,
          retryAfterMs,
        })),
      ).toEqual([
        { allowed: false, remaining: 2, retryAfterMs: Infinity },
        { allowed: true, remaining: 4, retryAfterMs: 0 },
      ]);
      expect((await fixture.limiter.peek(key, roomy)).results[0].remaining).toBe(4);
    });

    it('follows a policies array changed after its first use', async () => {
      const list: RateLimitPolicy[] = [{ name: 'a', ...policy }];
      expect((await consume(list)).results.map((result) => result.policy)).toEqual(['a']);
      list.push({ name: 'b', ...policy, limit: 5 });
      const both = await consume(list, 1);
      expect(both.results.map((result) => [result.policy, result.remaining])).toEqual([
        ['a', 0],
        ['b', 4],
      ]);
    });

    it('rejects (not throws) an invalid policy given to the service', async () => {
      const pending = fixture.limiter.consume(key, { limit: 0, window: '1s' });
      await expect(pending).rejects.toThrow(/limit must be a positive integer/);
    });

    it('answers a peek at an impossible cost with a no that never clears', async () => {
      const peeked = await fixture.limiter.peek(key, policy, 3);
      expect(peeked.allowed).toBe(false);
      expect(peeked.results[0]).toMatchObject({
        allowed: false,
        remaining: 2,
        retryAfterMs: Infinity,
      });
    });
  });
}
