import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import type { RateLimitModuleOptions } from '../../lib/interfaces/rate-limit-options.interface.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { startRedisServer } from '../support/redis-server.js';
import { RateLimitUnavailableException } from '../../lib/rate-limit.exceptions.js';

/**
 * One pod's leases on a real Redis, on a virtual clock: what a store call takes, what is
 * admitted without one, what a denial leaves with the pod, and what goes back.
 */
const redis = useRedisServer();
const open: LimiterFixture[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((fixture) => fixture.close()));
  await redis.admin.flushall();
});

/** A pod on the test's Redis and clock, counting its store calls. */
async function pod(clock: VirtualClock, options: RateLimitModuleOptions = {}) {
  const fixture = await new LimiterFixture('redis', redis.server.url, {
    clock: clock.read,
    ...options,
  }).ready();
  open.push(fixture);
  const counted = { calls: 0, limiter: fixture.limiter, fixture };
  const decide = fixture.store.decide.bind(fixture.store);
  fixture.store.decide = (request) => {
    counted.calls++;
    return decide(request);
  };
  return counted;
}

const WINDOW = 60_000;
const fixed = (limit: number, lease: number): RateLimitPolicy => ({
  name: 'fw',
  algorithm: 'fixed-window',
  limit,
  window: WINDOW,
  lease,
});

/** The fixed window's count in Redis for `key` ('index:count' on a caller's clock). */
async function counted(key: string, name = 'fw', code = 'fw3'): Promise<number> {
  const state = await redis.admin.get(`rl:{${key}}:${name}:${code}`);
  return state === null ? 0 : Number(state.split(':')[1]);
}

describe('a leased fixed window', () => {
  it('takes a lease in one store call and admits from it without another', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    const policy = fixed(1_000, 10);
    const first = await limiter.consume('k', policy);
    expect(first).toMatchObject({ allowed: true });
    expect(first.results[0]).toMatchObject({ remaining: 999, resetMs: WINDOW });
    expect(await counted('k')).toBe(10);
    for (let i = 1; i < 10; i++) {
      const decision = await limiter.consume('k', policy);
      expect(decision).toMatchObject({ allowed: true, leased: true });
      expect(decision.results[0].remaining).toBe(999 - i);
    }
    expect(p.calls).toBe(1);
    await limiter.consume('k', policy);
    expect(p.calls).toBe(2);
    expect(await counted('k')).toBe(20);
  });

  it('shrinks the lease as the budget runs low, down to one unit a call', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    const policy = fixed(100, 50);
    const grants: number[] = [];
    let before = 0;
    for (let admitted = 0; admitted < 100; admitted++) {
      expect((await limiter.consume('k', policy)).allowed).toBe(true);
      const now = await counted('k');
      if (now !== before) grants.push(now - before);
      before = now;
    }
    expect(grants.reduce((a, b) => a + b)).toBe(100);
    // min(50, max(1, floor(left / 8))): 12 of 100, 11 of 88, ..., then one by one.
    expect(grants.slice(0, 3)).toEqual([12, 11, 9]);
    expect(grants.slice(-8)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    expect((await limiter.consume('k', policy)).allowed).toBe(false);
  });

  it('ends the lease at the window end: the next window starts from the store', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    const policy = fixed(1_000, 10);
    await limiter.consume('k', policy);
    clock.advance(WINDOW - 1);
    expect(await limiter.consume('k', policy)).toMatchObject({ leased: true });
    clock.advance(1);
    expect(p.calls).toBe(1);
    expect((await limiter.consume('k', policy)).results[0]).toMatchObject({ remaining: 999 });
    expect(p.calls).toBe(2);
  });

  it('decides a request costing more than the lease on the store, at its cost', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    await limiter.consume('k', fixed(1_000, 10), 11);
    expect(await counted('k')).toBe(11);
  });

  it('gives back what it holds towards a request it holds too little for', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    const policy = fixed(1_000, 10);
    await limiter.consume('k', policy, 8); // holds 2 of 10
    await limiter.consume('k', policy, 5); // gives the 2 back towards 5: a lease of 10 more
    expect(await counted('k')).toBe(18);
    // 5 held: a request of 5 is admitted here.
    expect(await limiter.consume('k', policy, 5)).toMatchObject({ leased: true });
  });

  it('gives back what it holds when the app closes', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    await limiter.consume('k', fixed(1_000, 10), 3);
    expect(await counted('k')).toBe(10);
    await limiter.onApplicationShutdown();
    expect(await counted('k')).toBe(3);
  });

  it('forgets what it holds on reset', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    const policy = fixed(1_000, 10);
    await limiter.consume('k', policy);
    await limiter.reset('k', policy);
    await limiter.consume('k', policy);
    expect(p.calls).toBe(2);
    expect(await counted('k')).toBe(10);
  });

  it('peeks from what it holds, and asks the store when it holds too little', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    const policy = fixed(200, 10);
    await limiter.consume('k', policy, 2); // 8 held
    expect(await limiter.peek('k', policy, 8)).toMatchObject({ allowed: true, leased: true });
    expect(p.calls).toBe(1);
    // 8 held towards 9: the store is asked for 1 more, and charges nothing.
    const peeked = await limiter.peek('k', policy, 9);
    expect(peeked.allowed).toBe(true);
    expect(peeked.results[0].remaining).toBe(198);
    expect(p.calls).toBe(2);
    expect(await counted('k')).toBe(10);
  });

  it('serves requests arriving during a store call from its grant', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    const policy = fixed(1_000, 10);
    const decisions = await Promise.all(
      Array.from({ length: 10 }, () => limiter.consume('k', policy)),
    );
    expect(decisions.every((decision) => decision.allowed)).toBe(true);
    expect(p.calls).toBe(1);
  });
});

describe('a route with a leased and a plain policy', () => {
  const leased = fixed(1_000, 10);
  const plain: RateLimitPolicy = {
    name: 'plain',
    algorithm: 'sliding-window-log',
    limit: 3,
    window: WINDOW,
  };

  it('admits only when both admit, and a denial leaves the leased units with the pod', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    for (let i = 0; i < 3; i++)
      expect((await limiter.consume('k', [leased, plain])).allowed).toBe(true);
    const denied = await limiter.consume('k', [leased, plain]);
    expect(denied.allowed).toBe(false);
    expect(denied.results.map((result) => result.allowed)).toEqual([true, false]);
    expect(denied.results[0].remaining).toBe(997);
    expect(await counted('k')).toBe(10);
    // The 7 units left are still the pod's: the leased policy alone admits 7 without a call.
    for (let i = 0; i < 7; i++) {
      expect(await limiter.consume('k', leased)).toMatchObject({ allowed: true, leased: true });
    }
    expect(await counted('k')).toBe(10);
  });

  it('charges neither when the plain policy denies the lease call itself', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const { limiter } = await pod(clock);
    for (let i = 0; i < 3; i++) await limiter.consume('k', plain);
    expect((await limiter.consume('k', [leased, plain])).allowed).toBe(false);
    expect(await counted('k')).toBe(0);
  });
});

describe('a leased token bucket', () => {
  it('takes tokens from the bucket, ends the lease at its refill time, gives back into the bucket', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const p = await pod(clock);
    const { limiter } = p;
    // 1 token per 100 ms; a lease of 10 refills in 1 s.
    const policy: RateLimitPolicy = {
      name: 'tb',
      algorithm: 'token-bucket',
      limit: 100,
      window: 10_000,
      lease: 10,
    };
    await limiter.consume('k', policy);
    clock.advance(999);
    expect(await limiter.consume('k', policy)).toMatchObject({ leased: true });
    clock.advance(1);
    await limiter.consume('k', policy);
    expect(p.calls).toBe(2);
    await limiter.onApplicationShutdown();
    const [level] = (await redis.admin.get('rl:{k}:tb:tb2'))!.split(':').map(Number);
    // 100 - 10 + 10 refilled - 10, then 9 back: 99 tokens (the level counts tokens x window).
    expect(level / 10_000).toBe(99);
  });
});

describe("a leased token bucket's lease ending", () => {
  // 100 tokens a second, 1,000 at most: a lease of 50 ends 500 ms after it is taken.
  const exact: RateLimitPolicy = {
    name: 'tb',
    algorithm: 'token-bucket',
    limit: 100,
    window: 1_000,
    burst: 1_000,
  };
  const leased: RateLimitPolicy = { ...exact, lease: 50 };
  /** The bucket's state in Redis: its level in tokens, and when it was read. */
  const bucket = async () => {
    const [key] = await redis.admin.keys('*');
    const [level, at] = (await redis.admin.get(key))!.split(':').map(Number);
    return { tokens: level / 1_000, at };
  };

  it.each(['local', 'redis'] as const)(
    'on a %s clock, gives back what an idle pod holds, with no request, for others to use',
    async (clock) => {
      const idle = (await pod(new VirtualClock(), { clock })).limiter;
      const other = (await pod(new VirtualClock(), { clock })).limiter;
      await idle.consume('k', leased); // 50 taken, 49 held
      expect((await other.consume('k', exact, 900)).allowed).toBe(true); // 50 left
      const drained = await bucket();
      let now = drained;
      for (let tries = 0; tries < 150 && now.at === drained.at; tries++) {
        await sleep(20);
        now = await bucket();
      }
      // Written again, with no request since: what refilled since the drain, and the 49.
      expect(now.at).toBeGreaterThan(drained.at);
      expect(now.tokens - drained.tokens - (now.at - drained.at) / 10).toBeCloseTo(49, 6);
      expect((await other.consume('k', exact, Math.floor(now.tokens))).allowed).toBe(true);
    },
  );

  it('on a virtual clock, gives back what the ended lease held before taking the next', async () => {
    const clock = new VirtualClock(WINDOW * 1_000);
    const idle = (await pod(clock)).limiter;
    const other = (await pod(clock)).limiter;
    await idle.consume('k', leased);
    await other.consume('k', exact, 900);
    clock.advance(500);
    await idle.consume('k', leased);
    // 50 left, 50 refilled, 49 back: of 149, a new lease takes an eighth.
    expect((await bucket()).tokens).toBe(149 - 18);
  });
});

describe('the embedded store', () => {
  it('decides a leased policy directly', async () => {
    const fixture = new LimiterFixture('memory', undefined, {});
    open.push(fixture);
    const decision = await fixture.limiter.consume('k', fixed(2, 2));
    expect(decision.leased).toBeUndefined();
    expect(decision.results[0].remaining).toBe(1);
  });
});

describe('on Redis TIME', () => {
  it.each(['fixed-window', 'sliding-window-counter', 'token-bucket'] as const)(
    '%s: every key a lease or give-back writes expires, and exact pods read it',
    async (algorithm) => {
      const exact = (await pod(new VirtualClock(), { clock: 'redis' })).limiter;
      const leasing = (await pod(new VirtualClock(), { clock: 'redis' })).limiter;
      const policy: RateLimitPolicy = { algorithm, limit: 1_000, window: 3_600_000 };
      await exact.consume('k', policy, 5);
      await leasing.consume('k', { ...policy, lease: 50 }, 3);
      const key = (await redis.admin.keys('*'))[0];
      expect(await redis.admin.pttl(key)).toBeGreaterThan(0);
      expect((await exact.peek('k', policy)).results[0].remaining).toBeCloseTo(945, -0.5);
      await leasing.onApplicationShutdown();
      expect(await redis.admin.pttl(key)).toBeGreaterThan(0);
      expect((await exact.consume('k', policy)).results[0].remaining).toBeCloseTo(991, -0.5);
    },
  );
});

describe('a store failure', () => {
  it('leaves what the pod holds to admit (it was charged), then the store failure', async () => {
    const failing = await startRedisServer();
    const fixture = await new LimiterFixture('redis', failing.url, { timeout: 200 }).ready();
    try {
      const policy = fixed(1_000, 10);
      await fixture.limiter.consume('k', policy);
      await failing.kill();
      for (let i = 0; i < 9; i++) {
        expect(await fixture.limiter.consume('k', policy)).toMatchObject({ leased: true });
      }
      await expect(fixture.limiter.consume('k', policy)).rejects.toBeInstanceOf(
        RateLimitUnavailableException,
      );
    } finally {
      await fixture.close();
      await failing.stop();
    }
  });
});
