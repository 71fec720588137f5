import { DenyCache } from '../../lib/limiter/deny-cache.js';
import type { PolicyResult, RateLimitDecision } from '../../lib/index.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';

const source = { label: 'test', defaultScope: 'global' as const };
const [minute, second, log, blocking, failedOnly] = resolvePolicies(
  [
    { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m' },
    { name: 'second', algorithm: 'token-bucket', limit: 2, window: '1s', burst: 4 },
    { name: 'log', algorithm: 'sliding-window-log', limit: 5, window: '1s' },
    { name: 'blocked', algorithm: 'fixed-window', limit: 10, window: '1m', blockDuration: '5m' },
    { name: 'failed', algorithm: 'fixed-window', limit: 10, window: '1m', count: 'failed' },
  ],
  source,
);

const result = (overrides: Partial<PolicyResult>): PolicyResult => ({
  policy: 'minute',
  allowed: true,
  limit: 10,
  window: 60_000,
  capacity: 10,
  remaining: 3,
  resetMs: 40_000,
  retryAfterMs: 0,
  delayMs: 0,
  ...overrides,
});
const bucket = (overrides: Partial<PolicyResult>) =>
  result({ policy: 'second', limit: 2, window: 1_000, capacity: 4, ...overrides });
const denied = (...results: PolicyResult[]): RateLimitDecision => ({ allowed: false, results });
const noMargin = () => 0;
const appClock = () => new DenyCache(10, noMargin, true);

describe('DenyCache', () => {
  it('answers the same request, counted down, until its denial ends, then forgets it', () => {
    const cache = appClock();
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 20_000 }));
    cache.remember('k', ['k'], [minute], [1], 'consume', 1_000, cache.current, decision);
    expect(cache.lookup('k', [minute], [1], 'consume', 6_000)).toEqual({
      ...denied(result({ allowed: false, remaining: 0, resetMs: 35_000, retryAfterMs: 15_000 })),
      cached: true,
    });
    expect(cache.lookup('k', [minute], [1], 'peek', 20_999)?.results[0].retryAfterMs).toBe(1);
    // At the end itself the store admits; before the denial, the cache knows nothing.
    expect(cache.lookup('k', [minute], [1], 'consume', 21_000)).toBeUndefined();
    expect(cache.lookup('k', [minute], [1], 'consume', 1_000)).toBeUndefined();
  });

  it('asks the store for any other cost: its retry is not the cached one', () => {
    const cache = appClock();
    const decision = denied(
      bucket({ allowed: false, remaining: 1, resetMs: 1_500, retryAfterMs: 500 }),
    );
    cache.remember('k', ['k'], [second], [2], 'consume', 0, cache.current, decision);
    expect(cache.lookup('k', [second], [2], 'consume', 100)?.results[0].retryAfterMs).toBe(400);
    expect(cache.lookup('k', [second], [3], 'consume', 100)).toBeUndefined();
    expect(cache.lookup('k', [second], [1], 'consume', 100)).toBeUndefined();
  });

  it("answers later only while the denier's remaining cannot grow", () => {
    const cache = appClock();
    // Cost 3 with 1 token: a second token comes before the third, and remaining says so.
    const refilling = denied(
      bucket({ allowed: false, remaining: 1, resetMs: 1_500, retryAfterMs: 1_000 }),
    );
    cache.remember('a', ['a'], [second], [3], 'consume', 0, cache.current, refilling);
    expect(cache.lookup('a', [second], [3], 'consume', 0)).toBeDefined();
    expect(cache.lookup('a', [second], [3], 'consume', 1)).toBeUndefined();
    // A log that must age out several entries: when the first goes is not known.
    const aging = denied(
      result({ policy: 'log', allowed: false, remaining: 2, retryAfterMs: 300 }),
    );
    cache.remember('b', ['b'], [log], [4], 'consume', 0, cache.current, aging);
    expect(cache.lookup('b', [log], [4], 'consume', 1)).toBeUndefined();
    // A fixed window's count holds to the window's end, whatever the cost.
    const window = denied(
      result({ allowed: false, remaining: 1, resetMs: 500, retryAfterMs: 500 }),
    );
    cache.remember('c', ['c'], [minute], [3], 'consume', 0, cache.current, window);
    expect(cache.lookup('c', [minute], [3], 'consume', 499)?.results[0]).toMatchObject({
      remaining: 1,
      resetMs: 1,
      retryAfterMs: 1,
    });
  });

  it('on several policies, holds to the first horizon; a full admitting policy has none', () => {
    const cache = appClock();
    const full = bucket({ remaining: 4, resetMs: 0 });
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 30_000 }), full);
    cache.remember(
      'k1\nk2',
      ['k1', 'k2'],
      [minute, second],
      [1, 1],
      'consume',
      0,
      cache.current,
      decision,
    );
    expect(cache.lookup('k1\nk2', [minute, second], [1, 1], 'consume', 29_999)?.results).toEqual([
      result({ allowed: false, remaining: 0, resetMs: 10_001, retryAfterMs: 1 }),
      full,
    ]);
    // An admitting bucket that is not full refills: only the same instant is known.
    const refilling = bucket({ remaining: 2, resetMs: 1_000 });
    const other = denied(result({ allowed: false, remaining: 0, retryAfterMs: 30_000 }), refilling);
    cache.remember(
      'k3\nk4',
      ['k3', 'k4'],
      [minute, second],
      [1, 1],
      'consume',
      0,
      cache.current,
      other,
    );
    expect(cache.lookup('k3\nk4', [minute, second], [1, 1], 'consume', 0)).toBeDefined();
    expect(cache.lookup('k3\nk4', [minute, second], [1, 1], 'consume', 1)).toBeUndefined();
  });

  it('counts down fractions only at the same instant, and Redis time by whole ms', () => {
    const cache = appClock();
    const fraction = denied(
      bucket({ allowed: false, remaining: 0, resetMs: 1_833.5, retryAfterMs: 333.5 }),
    );
    cache.remember('k', ['k'], [second], [1], 'consume', 0, cache.current, fraction);
    expect(cache.lookup('k', [second], [1], 'consume', 0)).toBeDefined();
    expect(cache.lookup('k', [second], [1], 'consume', 1)).toBeUndefined();

    const redis = new DenyCache(10, noMargin, false);
    const whole = denied(result({ allowed: false, remaining: 0, retryAfterMs: 500 }));
    redis.remember('k', ['k'], [minute], [1], 'consume', 10.25, redis.current, whole);
    expect(redis.lookup('k', [minute], [1], 'consume', 12.1)?.results[0].retryAfterMs).toBe(499);
  });

  it("ends the entries on the keys this pod charged, a route's and those it shares", () => {
    const cache = appClock();
    const decision = denied(
      result({ allowed: false, remaining: 0, retryAfterMs: 5_000 }),
      result({}),
    );
    cache.remember(
      'a\nb',
      ['a', 'b'],
      [minute, second],
      [1, 1],
      'consume',
      0,
      cache.current,
      decision,
    );
    cache.remember(
      'c\nd',
      ['c', 'd'],
      [minute, second],
      [1, 1],
      'consume',
      0,
      cache.current,
      decision,
    );
    const one = denied(result({ allowed: false, remaining: 0, retryAfterMs: 5_000 }));
    cache.remember('b', ['b'], [minute], [1], 'consume', 0, cache.current, one);
    cache.charged(['b']);
    expect(cache.lookup('a\nb', [minute, second], [1, 1], 'consume', 0)).toBeUndefined();
    expect(cache.lookup('b', [minute], [1], 'consume', 0)).toBeUndefined();
    expect(cache.lookup('c\nd', [minute, second], [1, 1], 'consume', 0)).toBeDefined();
    cache.forget(['d']);
    expect(cache.empty).toBe(true);
  });

  it('a denial by a policy with a block answers a consume only at the instant of a consume', () => {
    const cache = appClock();
    const decision = denied(
      result({ policy: 'blocked', allowed: false, remaining: 0, retryAfterMs: 300_000 }),
    );
    cache.remember('k', ['k'], [blocking], [1], 'consume', 0, cache.current, decision);
    expect(cache.lookup('k', [blocking], [1], 'consume', 0)).toBeDefined();
    // The block may end before the denial does, and the next consume start another.
    expect(cache.lookup('k', [blocking], [1], 'consume', 1)).toBeUndefined();
    expect(cache.lookup('k', [blocking], [1], 'peek', 1)).toBeDefined();
    // A peek starts no block: a consume at the same instant would.
    cache.remember('p', ['p'], [blocking], [1], 'peek', 0, cache.current, decision);
    expect(cache.lookup('p', [blocking], [1], 'consume', 0)).toBeUndefined();
    expect(cache.lookup('p', [blocking], [1], 'peek', 0)).toBeDefined();
  });

  it('keeps nothing for admissions, for denials no time lifts, or across a reset', () => {
    const cache = appClock();
    const admitted = { allowed: true, results: [result({})] };
    cache.remember('a', ['a'], [minute], [1], 'consume', 0, cache.current, admitted);
    expect(cache.lookup('a', [minute], [1], 'consume', 0)).toBeUndefined();
    const never = denied(result({ allowed: false, retryAfterMs: Infinity }));
    cache.remember('b', ['b'], [minute], [1], 'consume', 0, cache.current, never);
    expect(cache.lookup('b', [minute], [1], 'consume', 0)).toBeUndefined();
    const sentBeforeReset = cache.current;
    cache.forget(['c']);
    const decision = denied(result({ allowed: false, retryAfterMs: 5_000 }));
    cache.remember('c', ['c'], [minute], [1], 'consume', 0, sentBeforeReset, decision);
    expect(cache.lookup('c', [minute], [1], 'consume', 0)).toBeUndefined();
  });

  it('keeps nothing for a request with a policy that counts by outcome: any pod may give it back', () => {
    const cache = appClock();
    const decision = denied(
      result({ allowed: false, remaining: 0, retryAfterMs: 20_000 }),
      result({ policy: 'failed' }),
    );
    cache.remember('k', ['k', 'f'], [minute, failedOnly], [1, 1], 'consume', 0, 0, decision);
    expect(cache.lookup('k', [minute, failedOnly], [1, 1], 'consume', 100)).toBeUndefined();
  });

  it('misses when the policies differ in what the store decides by', () => {
    const cache = appClock();
    const [looser] = resolvePolicies(
      [{ name: 'minute', algorithm: 'fixed-window', limit: 20, window: '1m' }],
      source,
    );
    const [alike] = resolvePolicies(
      [{ name: 'minute', algorithm: 'fixed-window', limit: 10, window: 60_000 }],
      source,
    );
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 5_000 }));
    cache.remember('k', ['k'], [minute], [1], 'consume', 0, cache.current, decision);
    expect(cache.lookup('k', [looser], [1], 'consume', 1)).toBeUndefined();
    expect(cache.lookup('k', [alike], [1], 'consume', 1)).toBeDefined();
    cache.remember('b', ['b'], [blocking], [1], 'consume', 0, cache.current, decision);
    expect(cache.lookup('b', [minute], [1], 'peek', 1)).toBeUndefined();
    expect(cache.lookup('b', [blocking], [1], 'peek', 1)).toBeDefined();
  });

  it('holds at most maxEntries, dropping the oldest written', () => {
    const cache = new DenyCache(2, noMargin, true);
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 5_000 }));
    for (const id of ['a', 'b', 'a', 'c']) {
      cache.remember(id, [id], [minute], [1], 'consume', 0, cache.current, decision);
    }
    expect(cache.lookup('b', [minute], [1], 'consume', 1)).toBeUndefined();
    expect(cache.lookup('a', [minute], [1], 'consume', 1)).toBeDefined();
    expect(cache.lookup('c', [minute], [1], 'consume', 1)).toBeDefined();
  });

  it('ends a denial early by the margin', () => {
    const cache = new DenyCache(10, (ms) => 1 + ms / 1_000, false);
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 10_000 }));
    cache.remember('k', ['k'], [minute], [1], 'consume', 0, cache.current, decision);
    expect(cache.lookup('k', [minute], [1], 'consume', 9_988)).toBeDefined();
    expect(cache.lookup('k', [minute], [1], 'consume', 9_989)).toBeUndefined();
  });
});
