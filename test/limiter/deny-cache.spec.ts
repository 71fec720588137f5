import { DenyCache } from '../../lib/limiter/deny-cache.js';
import type { PolicyResult, RateLimitDecision } from '../../lib/index.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';

const source = { label: 'test', defaultScope: 'global' as const };
const [minute, second] = resolvePolicies(
  [
    { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m' },
    { name: 'second', algorithm: 'token-bucket', limit: 2, window: '1s' },
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
const denied = (...results: PolicyResult[]): RateLimitDecision => ({ allowed: false, results });
const noMargin = () => 0;

describe('DenyCache', () => {
  it('answers a known denial until it ends, counted down, then forgets it', () => {
    const cache = new DenyCache(10, noMargin);
    const policies = [minute];
    const decision = denied(result({ allowed: false, remaining: 0, retryAfterMs: 20_000 }));
    cache.remember('k', ['k'], policies, [1], 1_000, cache.current, decision);
    expect(cache.lookup('k', policies, [1], 6_000)).toEqual({
      ...denied(result({ allowed: false, remaining: 0, resetMs: 35_000, retryAfterMs: 15_000 })),
      cached: true,
    });
    expect(cache.lookup('k', policies, [1], 20_999)?.results[0].retryAfterMs).toBe(1);
    // At T itself the store would admit: the cache must not answer.
    expect(cache.lookup('k', policies, [1], 21_000)).toBeUndefined();
    expect(cache.lookup('k', policies, [1], 1_000)).toBeUndefined();
  });

  it('covers costs at least as large, not smaller ones', () => {
    const cache = new DenyCache(10, noMargin);
    const decision = denied(result({ allowed: false, remaining: 2, retryAfterMs: 5_000 }));
    cache.remember('k', ['k'], [minute], [3], 0, cache.current, decision);
    expect(cache.lookup('k', [minute], [3], 1)?.allowed).toBe(false);
    expect(cache.lookup('k', [minute], [7], 1)?.allowed).toBe(false);
    expect(cache.lookup('k', [minute], [2], 1)).toBeUndefined();
  });

  it('on several policies, only those that denied count, each until its own end', () => {
    const cache = new DenyCache(10, noMargin);
    const policies = [minute, second];
    const decision = denied(
      result({ allowed: false, remaining: 0, retryAfterMs: 30_000 }),
      result({ policy: 'second', allowed: false, remaining: 0, resetMs: 900, retryAfterMs: 400 }),
    );
    cache.remember('k1\nk2', ['k1', 'k2'], policies, [1, 2], 0, cache.current, decision);
    const early = cache.lookup('k1\nk2', policies, [1, 2], 100)!;
    expect(early.results.map((r) => [r.allowed, r.retryAfterMs])).toEqual([
      [false, 29_900],
      [false, 300],
    ]);
    // Past the second policy's end, the first still denies; the second shows as admitting.
    const late = cache.lookup('k1\nk2', policies, [1, 2], 1_000)!;
    expect(late.results.map((r) => [r.allowed, r.retryAfterMs, r.resetMs])).toEqual([
      [false, 29_000, 39_000],
      [true, 0, 0],
    ]);
    // A smaller cost on the policy that still denies is not covered, whatever the other.
    expect(cache.lookup('k1\nk2', policies, [0, 2], 100)!.results[0].allowed).toBe(true);
    expect(cache.lookup('k1\nk2', policies, [0, 2], 1_000)).toBeUndefined();
  });

  it('keeps nothing for admissions, for denials no time lifts, or across a reset', () => {
    const cache = new DenyCache(10, noMargin);
    cache.remember('a', ['a'], [minute], [1], 0, cache.current, { allowed: true, results: [] });
    expect(cache.lookup('a', [minute], [1], 1)).toBeUndefined();
    const never = denied(result({ allowed: false, retryAfterMs: Infinity }));
    cache.remember('b', ['b'], [minute], [1], 0, cache.current, never);
    expect(cache.lookup('b', [minute], [1], 1)).toBeUndefined();
    const sentBeforeReset = cache.current;
    cache.forget(['c']);
    const decision = denied(result({ allowed: false, retryAfterMs: 5_000 }));
    cache.remember('c', ['c'], [minute], [1], 0, sentBeforeReset, decision);
    expect(cache.lookup('c', [minute], [1], 1)).toBeUndefined();
  });

  it('forgets every entry that involves a reset key', () => {
    const cache = new DenyCache(10, noMargin);
    const decision = denied(result({ allowed: false, retryAfterMs: 5_000 }), result({}));
    cache.remember('a\nb', ['a', 'b'], [minute, second], [1, 1], 0, cache.current, decision);
    cache.remember('c\nd', ['c', 'd'], [minute, second], [1, 1], 0, cache.current, decision);
    cache.forget(['b']);
    expect(cache.lookup('a\nb', [minute, second], [1, 1], 1)).toBeUndefined();
    expect(cache.lookup('c\nd', [minute, second], [1, 1], 1)).toBeDefined();
  });

  it('misses when the policies differ in what the store decides by', () => {
    const cache = new DenyCache(10, noMargin);
    const [looser] = resolvePolicies(
      [{ name: 'minute', algorithm: 'fixed-window', limit: 20, window: '1m' }],
      source,
    );
    const [alike] = resolvePolicies(
      [{ name: 'minute', algorithm: 'fixed-window', limit: 10, window: 60_000 }],
      source,
    );
    const decision = denied(result({ allowed: false, retryAfterMs: 5_000 }));
    cache.remember('k', ['k'], [minute], [1], 0, cache.current, decision);
    expect(cache.lookup('k', [looser], [1], 1)).toBeUndefined();
    expect(cache.lookup('k', [alike], [1], 1)).toBeDefined();
    // A block's denial binds only policies that read the block: one without it decides by
    // its window alone.
    const [blocking] = resolvePolicies(
      [{ name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m', blockDuration: '5m' }],
      source,
    );
    cache.remember('b', ['b'], [blocking], [1], 0, cache.current, decision);
    expect(cache.lookup('b', [minute], [1], 1)).toBeUndefined();
    expect(cache.lookup('b', [blocking], [1], 1)).toBeDefined();
  });

  it('holds at most maxEntries, dropping the oldest written', () => {
    const cache = new DenyCache(2, noMargin);
    const decision = denied(result({ allowed: false, retryAfterMs: 5_000 }));
    for (const id of ['a', 'b', 'a', 'c']) {
      cache.remember(id, [id], [minute], [1], 0, cache.current, decision);
    }
    expect(cache.lookup('b', [minute], [1], 1)).toBeUndefined();
    expect(cache.lookup('a', [minute], [1], 1)).toBeDefined();
    expect(cache.lookup('c', [minute], [1], 1)).toBeDefined();
  });

  it('ends a denial early by the margin', () => {
    const cache = new DenyCache(10, (retryAfterMs) => 1 + retryAfterMs / 1_000);
    const decision = denied(result({ allowed: false, retryAfterMs: 10_000 }));
    cache.remember('k', ['k'], [minute], [1], 0, cache.current, decision);
    expect(cache.lookup('k', [minute], [1], 9_988)).toBeDefined();
    expect(cache.lookup('k', [minute], [1], 9_989)).toBeUndefined();
  });
});
