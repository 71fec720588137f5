import { rateLimitHeaders } from '../../lib/guard/rate-limit-headers.js';
import type { PolicyResult } from '../../lib/interfaces/rate-limit-decision.interface.js';

const result = (overrides: Partial<PolicyResult>): PolicyResult => ({
  policy: 'default',
  allowed: true,
  limit: 100,
  window: 60_000,
  capacity: 100,
  remaining: 42,
  resetMs: 16_200,
  retryAfterMs: 0,
  delayMs: 0,
  ...overrides,
});

describe('rateLimitHeaders', () => {
  it('writes IETF structured fields, seconds rounded up', () => {
    expect(rateLimitHeaders({ allowed: true, results: [result({})] }, 'ietf')).toEqual({
      'RateLimit-Policy': '"default";q=100;w=60',
      RateLimit: '"default";r=42;t=17',
    });
  });

  it('lists one item per policy', () => {
    const headers = rateLimitHeaders(
      {
        allowed: true,
        results: [
          result({}),
          result({
            policy: 'burst',
            limit: 5,
            window: 1_000,
            capacity: 5,
            remaining: 4,
            resetMs: 200,
          }),
        ],
      },
      'ietf',
    );
    expect(headers['RateLimit-Policy']).toBe('"default";q=100;w=60, "burst";q=5;w=1');
    expect(headers.RateLimit).toBe('"default";r=42;t=17, "burst";r=4;t=1');
  });

  it('never shows r above q: a bucket larger than its limit advertises burst and its refill time', () => {
    const bucket = result({ policy: 'burst', limit: 2, window: 1_000, capacity: 5, remaining: 4 });
    expect(rateLimitHeaders({ allowed: true, results: [bucket] }, 'both')).toMatchObject({
      'RateLimit-Policy': '"burst";q=5;w=3',
      RateLimit: '"burst";r=4;t=17',
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '4',
    });
    // A bucket smaller than its limit keeps the limit and the window.
    const small = result({ limit: 10, window: 10_000, capacity: 3, remaining: 3 });
    expect(rateLimitHeaders({ allowed: true, results: [small] }, 'ietf')['RateLimit-Policy']).toBe(
      '"default";q=10;w=10',
    );
  });

  it('describes the most restrictive policy in legacy headers: fewest remaining, then latest reset', () => {
    const results = [
      result({ policy: 'a', limit: 10, capacity: 10, remaining: 3, resetMs: 1_000 }),
      result({ policy: 'b', limit: 20, capacity: 20, remaining: 3, resetMs: 9_000 }),
      result({ policy: 'c', limit: 30, capacity: 30, remaining: 7, resetMs: 99_000 }),
    ];
    expect(rateLimitHeaders({ allowed: true, results }, 'legacy')).toEqual({
      'X-RateLimit-Limit': '20',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': '9',
    });
  });

  it('breaks ties in legacy headers by remaining, then reset, then order', () => {
    const legacyLimit = (results: PolicyResult[]) =>
      rateLimitHeaders({ allowed: true, results }, 'legacy')['X-RateLimit-Limit'];
    const fewer = result({ limit: 10, capacity: 10, remaining: 3 });
    const more = result({ limit: 20, capacity: 20, remaining: 7 });
    expect(legacyLimit([more, fewer])).toBe('10');
    expect(legacyLimit([fewer, more])).toBe('10');
    const later = result({ limit: 10, capacity: 10, remaining: 3, resetMs: 9_000 });
    const sooner = result({ limit: 20, capacity: 20, remaining: 3, resetMs: 1_000 });
    expect(legacyLimit([later, sooner])).toBe('10');
    const twin = result({ limit: 20, capacity: 20, remaining: 3, resetMs: 9_000 });
    expect(legacyLimit([later, twin])).toBe('10');
  });

  it('writes both sets, or none', () => {
    const decision = { allowed: true, results: [result({})] };
    expect(Object.keys(rateLimitHeaders(decision, 'both'))).toHaveLength(5);
    expect(rateLimitHeaders(decision, 'none')).toEqual({});
    expect(rateLimitHeaders({ allowed: true, results: [] }, 'ietf')).toEqual({});
  });
});
