import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import {
  type PolicySource,
  resolvePolicies,
  sizePolicy,
} from '../../lib/config/resolved-policy.js';

/**
 * Each field's boundary, the exact message of each mistake, and what a resolved policy
 * holds per algorithm (the broader cases are in resolved-options.spec.ts).
 */
const route: PolicySource = {
  label: 'Shop.buy',
  routeId: 'Shop.buy',
  defaultScope: 'route' as const,
};
const one = (policy: unknown, source: PolicySource = route) =>
  resolvePolicies([policy as RateLimitPolicy], source)[0];
const message = (policy: unknown): string => {
  try {
    one(policy);
  } catch (error) {
    expect(error).toBeInstanceOf(RateLimitConfigError);
    return (error as Error).message;
  }
  return 'accepted';
};
const invalid = (name: string, field: string, problem: string) =>
  `Invalid rate limit policy "${name}" on Shop.buy: ${field} ${problem}`;
const NAME_RULE = "must be 1-64 letters, digits, '_', '.' or '-'";

const MISTAKES: [unknown, string][] = [
  [null, 'Invalid rate limit policy on Shop.buy: not an object'],
  [7, 'Invalid rate limit policy on Shop.buy: not an object'],
  [{ name: 5, limit: 1, window: 1 }, invalid('5', 'name', `${NAME_RULE} (got 5)`)],
  [{ name: '', limit: 1, window: 1 }, invalid('', 'name', `${NAME_RULE} (got "")`)],
  [{ name: 'a b', limit: 1, window: 1 }, invalid('a b', 'name', `${NAME_RULE} (got "a b")`)],
  [{ name: ':x', limit: 1, window: 1 }, invalid(':x', 'name', `${NAME_RULE} (got ":x")`)],
  [{ name: 'x:', limit: 1, window: 1 }, invalid('x:', 'name', `${NAME_RULE} (got "x:")`)],
  [
    { name: 'n'.repeat(65), limit: 1, window: 1 },
    invalid('n'.repeat(65), 'name', `${NAME_RULE} (got "${'n'.repeat(65)}")`),
  ],
  ...[7, 'toString', 'gcra', { toString: () => 'fixed-window' }].map(
    (algorithm): [unknown, string] => [
      { algorithm, limit: 1, window: 1 },
      invalid(
        'default',
        'algorithm',
        `must be one of token-bucket, leaky-bucket, fixed-window, sliding-window-log, sliding-window-counter (got ${JSON.stringify(algorithm)})`,
      ),
    ],
  ),
  ...[0, -1, 1.5, '5', 2 ** 53, undefined].map((limit): [unknown, string] => [
    { limit, window: 1 },
    invalid('default', 'limit', `must be a positive integer (got ${JSON.stringify(limit)})`),
  ]),
  [
    { limit: 1, window: '1 minute' },
    invalid(
      'default',
      'window',
      `must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got "1 minute")`,
    ),
  ],
  [
    { limit: 1, window: 1, burst: 0.5 },
    invalid('default', 'burst', 'must be a positive integer (got 0.5)'),
  ],
  [
    { limit: 1, window: 1, cost: 0 },
    invalid('default', 'cost', 'must be a positive integer or a function (got 0)'),
  ],
  [
    { limit: 1, window: 1, cost: '1' },
    invalid('default', 'cost', 'must be a positive integer or a function (got "1")'),
  ],
  [
    { algorithm: 'token-bucket', limit: 5, window: 1, burst: 8, cost: 9 },
    invalid('default', 'cost', '9 exceeds what the policy can ever admit (8)'),
  ],
  [
    { algorithm: 'fixed-window', limit: 5, window: 1, burst: 8, cost: 6 },
    invalid('default', 'cost', '6 exceeds what the policy can ever admit (5)'),
  ],
  [{ limit: 1, window: 1, keyBy: 'user' }, invalid('default', 'keyBy', 'must be a function')],
  [
    { limit: 1, window: 1, scope: 'tenant' },
    invalid('default', 'scope', `must be 'route' or 'global' (got "tenant")`),
  ],
  [
    { limit: 1, window: 1, shadow: 1 },
    invalid('default', 'shadow', 'must be true or false (got 1)'),
  ],
  [
    { limit: 1, window: 1, blockDuration: '5 minutes' },
    invalid(
      'default',
      'blockDuration',
      `must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got "5 minutes")`,
    ),
  ],
  [
    { limit: 1, window: 1, blockDuration: 0 },
    invalid(
      'default',
      'blockDuration',
      `must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got 0)`,
    ),
  ],
  [
    { limit: 1, window: 1, count: 'failures' },
    invalid('default', 'count', `must be 'all', 'failed' or 'succeeded' (got "failures")`),
  ],
  [
    { limit: 1, window: 1, count: 'failed', isFailure: true },
    invalid('default', 'isFailure', 'must be a function'),
  ],
  [
    { limit: 1, window: 1, isFailure: () => true },
    invalid(
      'default',
      'isFailure',
      "applies only with count 'failed' or 'succeeded' (count is 'all')",
    ),
  ],
];

describe('resolvePolicies messages', () => {
  it.each(MISTAKES)('%p: %s', (policy, expected) => {
    expect(message(policy)).toBe(expected);
  });

  it('names a duplicate name', () => {
    expect(() =>
      resolvePolicies(
        [
          { name: 'minute', limit: 1, window: 1 },
          { name: 'minute', limit: 2, window: 2 },
        ],
        route,
      ),
    ).toThrow(
      new RateLimitConfigError(
        'Invalid rate limit policy "minute" on Shop.buy: name is used twice; names must be unique',
      ),
    );
  });
});

describe('resolvePolicies results', () => {
  it.each([
    { name: 'n'.repeat(64), limit: 1, window: 1 },
    { name: 'A-z_0.9', limit: 1, window: 1 },
    { limit: 2 ** 53 - 1, window: 1 },
    { limit: 3, window: 1, cost: 3 },
    { algorithm: 'leaky-bucket', limit: 3, window: 1, burst: 5, cost: 5 },
    { limit: 3, window: 1, cost: () => 99 },
    { limit: 3, window: 1, shadow: false },
  ])('accepts %p', (policy) => {
    expect(message(policy)).toBe('accepted');
  });

  it.each([
    ['token-bucket', 'tb2', 8],
    ['leaky-bucket', 'lb', 8],
    ['fixed-window', 'fw3', 5],
    ['sliding-window-log', 'swl', 5],
    ['sliding-window-counter', 'swc2', 5],
  ])('%s: key code %s, capacity %d from limit 5 and burst 8', (algorithm, code, capacity) => {
    const keyBy = () => 'k';
    expect(one({ algorithm, limit: 5, window: '2s', burst: 8, keyBy, shadow: true })).toEqual({
      name: 'default',
      algorithm,
      limit: 5,
      windowMs: 2_000,
      burst: capacity,
      maxCost: capacity,
      cost: 1,
      keyBy,
      scope: 'route',
      shadow: true,
      blockMs: 0,
      lease: 0,
      count: 'all',
      keySuffix: `:default:${code}:Shop.buy`,
      scriptArgs: ['5', '2000', String(capacity)],
    });
  });

  it("reads count, 'all' when unset, and keeps isFailure, also through sizing", () => {
    const isFailure = () => true;
    expect(one({ limit: 1, window: 1 })).toMatchObject({ count: 'all', isFailure: undefined });
    const counted = one({ limit: 1, window: 1, count: 'succeeded', isFailure });
    expect(counted).toMatchObject({ count: 'succeeded', isFailure });
    expect(sizePolicy(counted, 2, undefined)).toMatchObject({ count: 'succeeded', isFailure });
  });

  it('reads blockDuration as a duration, and none as 0', () => {
    expect(one({ limit: 1, window: 1, blockDuration: '1.5s' }).blockMs).toBe(1_500);
    expect(one({ limit: 1, window: 1, blockDuration: 250 }).blockMs).toBe(250);
    expect(one({ limit: 1, window: 1 }).blockMs).toBe(0);
  });

  it('fills a bucket without burst to its limit', () => {
    expect(one({ algorithm: 'token-bucket', limit: 4, window: 1 })).toMatchObject({
      burst: 4,
      maxCost: 4,
      scriptArgs: ['4', '1', '4'],
      shadow: false,
      keyBy: undefined,
    });
  });

  it('adds the route to keys of route-scoped policies only, and only where there is a route', () => {
    const service = { label: 'RateLimiter', defaultScope: 'global' as const };
    const suffix = (policy: object, source: Parameters<typeof one>[1]) =>
      one({ name: 'p', limit: 1, window: 1, ...policy }, source).keySuffix;
    expect(suffix({}, route)).toBe(':p:swc2:Shop.buy');
    expect(suffix({ scope: 'global' }, route)).toBe(':p:swc2');
    expect(suffix({}, service)).toBe(':p:swc2');
    expect(suffix({ scope: 'route' }, service)).toBe(':p:swc2');
    expect(suffix({ scope: 'route' }, { ...service, routeId: 'R.r' })).toBe(':p:swc2:R.r');
    expect(one({ limit: 1, window: 1 }, service).scope).toBe('global');
  });
});

describe('resolvePolicies with limits per request', () => {
  const guard: PolicySource = { ...route, perRequest: true };
  const byGuard = (policy: unknown) => resolvePolicies([policy as RateLimitPolicy], guard)[0];
  const refusal = (policy: unknown, source: PolicySource) => {
    try {
      resolvePolicies([policy as RateLimitPolicy], source);
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };
  const perPlan = () => 5;

  it.each([
    [{ limit: perPlan, window: 1 }, route, 'limit'],
    [{ algorithm: 'token-bucket', limit: 1, window: 1, burst: perPlan }, route, 'burst'],
  ])('refuses a function %p where no request can call it', (policy, source, field) => {
    expect(refusal(policy, source)).toBe(
      invalid(
        'default',
        field,
        'is a function, which only RateLimitGuard can call (with the request); call it yourself and pass the number it gives',
      ),
    );
  });

  it.each([
    [
      { limit: 0, window: 1 },
      invalid('default', 'limit', 'must be a positive integer or a function (got 0)'),
    ],
    [
      { limit: 1, window: 1, burst: 0.5 },
      invalid('default', 'burst', 'must be a positive integer or a function (got 0.5)'),
    ],
    [
      { limit: perPlan, window: () => 1_000 },
      invalid('default', 'window', 'must be fixed: a function is allowed only for limit and burst'),
    ],
  ])('on the guard, %p: %s', (policy, expected) => {
    expect(refusal(policy, guard)).toBe(expected);
  });

  it('leaves a policy with a function as a template, its cost checked per request', () => {
    expect(
      byGuard({ algorithm: 'fixed-window', limit: perPlan, window: 1, burst: perPlan, cost: 50 }),
    ).toMatchObject({
      limit: NaN,
      burst: NaN,
      maxCost: NaN,
      cost: 50,
      scriptArgs: [],
      keySuffix: ':default:fw3:Shop.buy',
      // The window algorithms ignore burst.
      perRequest: { limit: perPlan, burst: undefined },
    });
    expect(
      byGuard({ algorithm: 'leaky-bucket', limit: 3, window: 1, burst: perPlan }).perRequest,
    ).toEqual({
      limit: 3,
      burst: perPlan,
    });
  });

  it('sizes a policy of numbers at once, on the guard as on the service', () => {
    const sized = byGuard({ algorithm: 'token-bucket', limit: 3, window: 1, burst: 4 });
    expect(sized).toMatchObject({ limit: 3, burst: 4, maxCost: 4, scriptArgs: ['3', '1', '4'] });
    expect(sized.perRequest).toBeUndefined();
  });
});

describe('lease', () => {
  it.each<[unknown, string]>([
    [
      { algorithm: 'sliding-window-log', limit: 10, window: 1, lease: 2 },
      invalid(
        'default',
        'lease',
        'applies only to fixed-window, sliding-window-counter, token-bucket (the algorithm is sliding-window-log)',
      ),
    ],
    [
      { algorithm: 'leaky-bucket', limit: 10, window: 1, lease: 2 },
      invalid(
        'default',
        'lease',
        'applies only to fixed-window, sliding-window-counter, token-bucket (the algorithm is leaky-bucket)',
      ),
    ],
    [
      { limit: 10, window: 1, lease: 0 },
      invalid('default', 'lease', 'must be a positive integer (got 0)'),
    ],
    [
      { limit: 10, window: 1, lease: 2.5 },
      invalid('default', 'lease', 'must be a positive integer (got 2.5)'),
    ],
    [
      { limit: 10, window: 1, lease: '5' },
      invalid('default', 'lease', 'must be a positive integer (got "5")'),
    ],
    [{ limit: 10, window: 1, lease: 11 }, invalid('default', 'lease', '11 exceeds the limit (10)')],
    [
      { limit: 10, window: 1, lease: 5, blockDuration: 100 },
      invalid('default', 'lease', 'cannot be combined with blockDuration'),
    ],
    [
      { limit: 10, window: 1, lease: 5, shadow: true },
      invalid('default', 'lease', 'cannot be combined with shadow'),
    ],
  ])('%p: %s', (policy, expected) => {
    expect(message(policy)).toBe(expected);
  });

  it('is 0 when unset, the lease when set, capped by the capacity a function limit resolves to', () => {
    expect(one({ limit: 10, window: 1 }).lease).toBe(0);
    expect(one({ algorithm: 'token-bucket', limit: 10, window: 1, lease: 10 }).lease).toBe(10);
    expect(
      one({ algorithm: 'token-bucket', limit: 10, burst: 4, window: 1, lease: 10 }).lease,
    ).toBe(4);
    const template = one(
      { algorithm: 'fixed-window', limit: () => 3, window: 1, lease: 50 },
      { ...route, perRequest: true },
    );
    expect(template.lease).toBe(50);
    expect(sizePolicy(template, 3, undefined).lease).toBe(3);
    expect(sizePolicy(template, 500, undefined).lease).toBe(50);
  });
});
