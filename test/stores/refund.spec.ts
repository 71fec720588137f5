import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import type { Charge, RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import type { ResolvedPolicy } from '../../lib/interfaces/resolved-policy.interface.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * What a refund gives back, algorithm by algorithm, on both stores: the units of a charge,
 * never beyond what the algorithm could hold, only in the window charged, and nothing where
 * there is no state. The differential spec holds the two stores to each other on random
 * traces; this one holds them to the contract.
 */
const redisServer = useRedisServer();

const T0 = 1_700_000_000_000;

describe.each(['redis', 'memory'] as const)('refund on the %s store', (kind) => {
  const clock = new VirtualClock();
  let fixture: LimiterFixture;
  let limiter: RateLimiter;
  let n = 0;
  /** A policy of its own per test: no two tests share a key. */
  const policy = (fields: Omit<RateLimitPolicy, 'name'>): RateLimitPolicy => ({
    name: `p${++n}`,
    ...fields,
  });
  const consume = (p: RateLimitPolicy | RateLimitPolicy[], cost?: number) =>
    limiter.consume('client', p, cost);
  const remaining = async (p: RateLimitPolicy) =>
    (await limiter.peek('client', p)).results[0].remaining;
  /** What the guard keeps of an admitted consume, at the instant it was decided. */
  const charge = async (p: RateLimitPolicy): Promise<Charge> => {
    const decision = await consume(p);
    expect(decision.allowed).toBe(true);
    const policies = (limiter as unknown as { resolve(p: unknown): ResolvedPolicy[] }).resolve(p);
    return { clientKeys: ['client'], policies, costs: [1], decision, instant: clock.now };
  };

  beforeAll(async () => {
    const options = { clock: clock.read, timeout: 5_000, denyCache: false, prefix: kind };
    fixture = new LimiterFixture(kind, kind === 'redis' ? redisServer.server.url : undefined, {
      ...options,
    });
    await fixture.ready();
    limiter = fixture.limiter;
  });
  afterAll(() => fixture.close());
  beforeEach(() => clock.set(T0 + 100));
  afterEach(async () => {
    // Every key a refund writes keeps an expiry.
    if (kind !== 'redis') return;
    const admin = redisServer.admin;
    for (const key of await admin.keys(`${kind}*`)) {
      expect({ key, ttl: (await admin.pttl(key)) > 0 }).toEqual({ key, ttl: true });
    }
  });

  it.each(['fixed-window', 'sliding-window-counter', 'sliding-window-log'] as const)(
    '%s: a refunded unit is admitted again, once',
    async (algorithm) => {
      const p = policy({ algorithm, limit: 3, window: 1_000 });
      for (let i = 0; i < 3; i++) expect((await consume(p)).allowed).toBe(true);
      expect((await consume(p)).allowed).toBe(false);
      await limiter.refund('client', p);
      expect(await remaining(p)).toBe(1);
      expect((await consume(p)).allowed).toBe(true);
      expect((await consume(p)).allowed).toBe(false);
    },
  );

  it.each(['fixed-window', 'sliding-window-counter', 'sliding-window-log'] as const)(
    '%s: never below zero',
    async (algorithm) => {
      const p = policy({ algorithm, limit: 3, window: 1_000 });
      await consume(p);
      await limiter.refund('client', p, 3);
      expect(await remaining(p)).toBe(3);
      for (let i = 0; i < 3; i++) expect((await consume(p)).allowed).toBe(true);
      expect((await consume(p)).allowed).toBe(false);
    },
  );

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: a refund after the window charged ended changes nothing',
    async (algorithm) => {
      const p = policy({ algorithm, limit: 2, window: 1_000 });
      const charged = await charge(p);
      clock.set(T0 + 1_000);
      await consume(p);
      await consume(p);
      await limiter.refundCharge(charged, [0]);
      expect((await consume(p)).allowed).toBe(false);
    },
  );

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: the charge is given back in its window, though the refund comes a window later',
    async (algorithm) => {
      // The charge in window 0 at its last ms; the refund reaches the store in window 1.
      clock.set(T0 + 999);
      const p = policy({ algorithm, limit: 1, window: 1_000 });
      const charged = await charge(p);
      clock.set(T0 + 1_000);
      expect((await consume(p)).allowed).toBe(algorithm === 'fixed-window');
      await limiter.refundCharge(charged, [0]);
      // The window-1 charge stays (fixed); the counter's window-0 count, still weighing in
      // as its previous window's, is not touched either.
      expect((await consume(p)).allowed).toBe(false);
    },
  );

  it('token bucket: never above its burst', async () => {
    const p = policy({ algorithm: 'token-bucket', limit: 2, window: 1_000, burst: 4 });
    await consume(p, 3);
    expect(await remaining(p)).toBe(1);
    await limiter.refund('client', p, 2);
    expect(await remaining(p)).toBe(3);
    await limiter.refund('client', p, 4);
    expect(await remaining(p)).toBe(4);
    for (let i = 0; i < 4; i++) expect((await consume(p)).allowed).toBe(true);
    expect((await consume(p)).allowed).toBe(false);
  });

  it("sliding log: the charge's own entries go, not the newest", async () => {
    const p = policy({ algorithm: 'sliding-window-log', limit: 2, window: 1_000 });
    const first = await charge(p);
    clock.set(T0 + 600);
    await consume(p);
    await limiter.refundCharge(first, [0]);
    // The entry of T0 + 600 stays until T0 + 1600.
    clock.set(T0 + 1_200);
    expect(await remaining(p)).toBe(1);
    clock.set(T0 + 1_600);
    expect(await remaining(p)).toBe(2);
  });

  it('sliding log: without an instant, the newest entries go', async () => {
    const p = policy({ algorithm: 'sliding-window-log', limit: 2, window: 1_000 });
    await consume(p);
    clock.set(T0 + 600);
    await consume(p);
    await limiter.refund('client', p);
    clock.set(T0 + 1_200);
    expect(await remaining(p)).toBe(2);
  });

  it('leaky bucket: a slot not yet started is freed', async () => {
    const p = policy({ algorithm: 'leaky-bucket', limit: 1, window: 1_000, burst: 3 });
    const delays = [];
    for (let i = 0; i < 3; i++) delays.push((await consume(p)).results[0].delayMs);
    expect(delays).toEqual([0, 1_000, 2_000]);
    expect((await consume(p)).allowed).toBe(false);
    await limiter.refund('client', p);
    const next = await consume(p);
    expect(next.results[0]).toMatchObject({ allowed: true, delayMs: 2_000 });
  });

  it('leaky bucket: a slot already over frees nothing', async () => {
    const p = policy({ algorithm: 'leaky-bucket', limit: 1, window: 1_000, burst: 2 });
    const first = await charge(p);
    await consume(p);
    // The first slot ran from T0 + 100 to T0 + 1100; the second holds the queue to T0 + 2100.
    clock.set(T0 + 1_100);
    await limiter.refundCharge(first, [0]);
    expect((await limiter.peek('client', p)).results[0].delayMs).toBe(1_000);
  });

  it('leaky bucket: the started slot gives back what of it is still to come', async () => {
    const p = policy({ algorithm: 'leaky-bucket', limit: 1, window: 1_000, burst: 2 });
    const first = await charge(p);
    await consume(p);
    clock.set(T0 + 400);
    // Queue free at T0 + 2100; the first slot (T0 + 100 to 1100) has 700 ms to come.
    await limiter.refundCharge(first, [0]);
    clock.set(T0 + 400 + 300);
    expect((await limiter.peek('client', p)).results[0]).toMatchObject({
      allowed: true,
      // Free at T0 + 1400 now, instead of T0 + 2100.
      delayMs: 700,
    });
  });

  it.each([
    'fixed-window',
    'sliding-window-counter',
    'sliding-window-log',
    'token-bucket',
    'leaky-bucket',
  ] as const)('%s: nothing happens for a key without state', async (algorithm) => {
    const p = policy({ algorithm, limit: 2, window: 1_000 });
    await limiter.refund('client', p);
    if (kind === 'redis') expect(await redisServer.admin.keys(`*:${p.name}:*`)).toEqual([]);
    expect(await remaining(p)).toBe(2);
    expect((await consume(p, 2)).allowed).toBe(true);
    expect((await consume(p)).allowed).toBe(false);
  });

  it('gives back every policy of the call, in one go', async () => {
    const policies = [
      policy({ algorithm: 'fixed-window', limit: 1, window: 1_000 }),
      policy({ algorithm: 'token-bucket', limit: 1, window: 1_000 }),
    ];
    expect((await consume(policies)).allowed).toBe(true);
    expect((await consume(policies)).allowed).toBe(false);
    await limiter.refund('client', policies);
    expect((await consume(policies)).allowed).toBe(true);
  });

  it('refuses a cost that is not a positive integer', async () => {
    const p = policy({ algorithm: 'fixed-window', limit: 1, window: 1_000 });
    await expect(limiter.refund('client', p, 0)).rejects.toMatchObject({ status: 400 });
    await expect(limiter.refund('client', p, 1.5)).rejects.toMatchObject({ status: 400 });
  });
});

describe('refund beside leases and the deny cache', () => {
  const clock = new VirtualClock();
  const fixtures: LimiterFixture[] = [];
  const limiterWith = async (prefix: string, denyCache: boolean) => {
    const fixture = new LimiterFixture('redis', redisServer.server.url, {
      clock: clock.read,
      timeout: 5_000,
      denyCache,
      prefix,
    });
    fixtures.push(await fixture.ready());
    return fixture.limiter;
  };
  afterAll(() => Promise.all(fixtures.map((fixture) => fixture.close())));
  beforeEach(() => clock.set(T0 + 100));

  it("a leased window's units go back to what the pod holds, not to the store", async () => {
    const limiter = await limiterWith('leased', false);
    const p: RateLimitPolicy = {
      name: 'leased',
      algorithm: 'fixed-window',
      limit: 10,
      window: 1_000,
      lease: 5,
    };
    expect((await limiter.consume('client', p)).allowed).toBe(true);
    const [key] = await redisServer.admin.keys('leased*');
    const charged = await redisServer.admin.get(key);
    await limiter.refund('client', p);
    // The store still counts the lease; the pod admits the unit again from what it holds.
    expect(await redisServer.admin.get(key)).toBe(charged);
    let admitted = 1;
    while ((await limiter.consume('client', p)).allowed) admitted++;
    expect(admitted).toBe(11);
  });

  it('a denial the cache knows is dropped by a refund on its keys', async () => {
    const limiter = await limiterWith('cached', true);
    const p: RateLimitPolicy = {
      name: 'cached',
      algorithm: 'fixed-window',
      limit: 1,
      window: 1_000,
    };
    expect((await limiter.consume('client', p)).allowed).toBe(true);
    expect((await limiter.consume('client', p)).allowed).toBe(false);
    expect((await limiter.consume('client', p)).cached).toBe(true);
    await limiter.refund('client', p);
    expect((await limiter.consume('client', p)).allowed).toBe(true);
  });
});
