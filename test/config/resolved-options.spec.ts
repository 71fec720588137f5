import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import type { RateLimitModuleOptions } from '../../lib/interfaces/rate-limit-options.interface.js';

describe('resolveOptions', () => {
  it('fills in the documented defaults', () => {
    expect(resolveOptions({})).toMatchObject({
      prefix: 'rl',
      policies: [],
      failureMode: 'open',
      timeout: 100,
      maxWait: 2_000,
      breaker: { failures: 3, halfOpenAfter: 500 },
      instances: undefined,
      headers: 'ietf',
      dryRun: false,
      clock: 'redis',
      denyCacheEntries: 10_000,
      guard: true,
      ipv6Subnet: 64,
    });
    expect(resolveOptions({ denyCache: false }).denyCacheEntries).toBe(0);
    expect(resolveOptions({ denyCache: { maxEntries: 5 } }).denyCacheEntries).toBe(5);
  });

  it.each([
    [{ prefix: 'a{b}' }, 'prefix'],
    [{ prefix: 'x'.repeat(33) }, 'prefix'],
    [{ failureMode: 'sometimes' }, 'failureMode'],
    [{ timeout: 0 }, 'timeout'],
    [{ timeout: 200, maxWait: 150 }, 'maxWait'],
    [{ breaker: true }, 'breaker'],
    [{ breaker: { failures: 0 } }, 'breaker.failures'],
    [{ breaker: { halfOpenAfter: -1 } }, 'breaker.halfOpenAfter'],
    [{ failureMode: 'local' }, 'instances'],
    [{ failureMode: 'local', instances: 2.5 }, 'instances'],
    [{ failureMode: 'open', instances: 0 }, 'instances'],
    [{ headers: 'x-only' }, 'headers'],
    [{ clock: 'ntp' }, 'clock'],
    [{ ipv6Subnet: 31 }, 'ipv6Subnet'],
    [{ ipv6Subnet: 129 }, 'ipv6Subnet'],
    [{ ipv6Subnet: 48.5 }, 'ipv6Subnet'],
    [{ ipv6Subnet: '48' }, 'ipv6Subnet'],
    [{ keyBy: 'ip' }, 'keyBy'],
    [{ onDecision: 'log' }, 'onDecision'],
    [{ limitedResponse: 429 }, 'limitedResponse'],
    [{ unavailableResponse: {} }, 'unavailableResponse'],
    [{ denyCache: 'yes' }, 'denyCache'],
    [{ denyCache: { maxEntries: 0 } }, 'denyCache'],
    [{ openApi: 'yes' }, 'openApi'],
    [{ openApi: { limitedSchema: 'Body' } }, 'openApi.limitedSchema'],
    [{ openApi: { unavailableSchema: [] } }, 'openApi.unavailableSchema'],
    [{ policies: [{ limit: 0, window: '1m' }] }, 'limit'],
    [{ policies: [{ limit: 1, window: '1m', shadow: 'yes' }] }, 'shadow'],
  ])('rejects %p naming %s', (options, field) => {
    expect(() => resolveOptions(options as never)).toThrow(RateLimitConfigError);
    expect(() => resolveOptions(options as never)).toThrow(field);
  });

  it('resolves the failure options: maxWait follows a larger timeout, the breaker can be off', () => {
    expect(resolveOptions({ timeout: 5_000 }).maxWait).toBe(5_000);
    expect(resolveOptions({ breaker: false }).breaker).toBeUndefined();
    expect(resolveOptions({ breaker: { failures: 5 } }).breaker).toEqual({
      failures: 5,
      halfOpenAfter: 500,
    });
    expect(resolveOptions({ failureMode: 'local', instances: 4 })).toMatchObject({
      failureMode: 'local',
      instances: 4,
    });
  });
});

/**
 * Every option's boundary and the exact text of every message: the messages are what a
 * developer reads when the start fails, so each is pinned whole (the broader cases are in
 * 'resolveOptions' above).
 */
const message = (options: unknown): string => {
  try {
    resolveOptions(options as RateLimitModuleOptions);
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
  return 'accepted';
};
const invalid = (field: string, problem: string) =>
  `RateLimitConfigError: Invalid RateLimitModule option ${field}: ${problem}`;

const store = { decide: () => undefined, reset: () => undefined, close: () => undefined };

const MISTAKES: [unknown, string][] = [
  [
    { ipv6Subnet: 16 },
    invalid(
      'ipv6Subnet',
      'must be an integer from 32 to 128, the leading bits of an IPv6 address that make one client (got 16)',
    ),
  ],
  [{ prefix: 5 }, invalid('prefix', 'must be 1-32 bytes without braces or spaces (got 5)')],
  [{ prefix: '' }, invalid('prefix', 'must be 1-32 bytes without braces or spaces (got "")')],
  [{ prefix: 'a b' }, invalid('prefix', 'must be 1-32 bytes without braces or spaces (got "a b")')],
  [{ prefix: '{ab' }, invalid('prefix', 'must be 1-32 bytes without braces or spaces (got "{ab")')],
  [{ prefix: 'ab}' }, invalid('prefix', 'must be 1-32 bytes without braces or spaces (got "ab}")')],
  // 17 characters, 34 bytes.
  [
    { prefix: 'é'.repeat(17) },
    invalid('prefix', `must be 1-32 bytes without braces or spaces (got "${'é'.repeat(17)}")`),
  ],
  [
    { prefix: () => 'rl' },
    invalid('prefix', 'must be 1-32 bytes without braces or spaces (got a function)'),
  ],
  [{ policies: {} }, invalid('policies', 'must be an array of policies')],
  [
    { failureMode: 'sometimes' },
    invalid('failureMode', `must be 'open', 'closed' or 'local' (got "sometimes")`),
  ],
  [{ timeout: Infinity }, invalid('timeout', 'must be a positive number of ms (got null)')],
  [{ timeout: '100' }, invalid('timeout', 'must be a positive number of ms (got "100")')],
  [
    { maxWait: 'abc' },
    invalid('maxWait', 'must be a number of ms no smaller than timeout (got "abc")'),
  ],
  [
    { maxWait: Infinity },
    invalid('maxWait', 'must be a number of ms no smaller than timeout (got null)'),
  ],
  [
    { timeout: 200, maxWait: 199 },
    invalid('maxWait', 'must be a number of ms no smaller than timeout (got 199)'),
  ],
  [{ breaker: null }, invalid('breaker', 'must be false or { failures?, halfOpenAfter? }')],
  [{ breaker: 3 }, invalid('breaker', 'must be false or { failures?, halfOpenAfter? }')],
  [
    { breaker: { failures: 1.5 } },
    invalid('breaker.failures', 'must be a positive integer (got 1.5)'),
  ],
  [{ breaker: { failures: 0 } }, invalid('breaker.failures', 'must be a positive integer (got 0)')],
  [
    { breaker: { halfOpenAfter: 0 } },
    invalid('breaker.halfOpenAfter', 'must be a positive number of ms (got 0)'),
  ],
  [
    { failureMode: 'local', instances: 0 },
    invalid(
      'instances',
      "must be a positive integer with failureMode 'local': each instance decides at limit / instances while the store is unavailable (got 0)",
    ),
  ],
  [
    { failureMode: 'local' },
    invalid(
      'instances',
      "must be a positive integer with failureMode 'local': each instance decides at limit / instances while the store is unavailable (got undefined)",
    ),
  ],
  [
    { failureMode: 'closed', instances: 1.5 },
    invalid(
      'instances',
      'must be a positive integer: each instance decides at limit / instances while the store is unavailable (got 1.5)',
    ),
  ],
  [
    { policies: [{ limit: 5, window: '1s', failureMode: 'local' }] },
    'RateLimitConfigError: Invalid rate limit policy "default" on RateLimitModule options: failureMode \'local\' needs the module option instances: how many instances share the limits while the store is unavailable',
  ],
  [
    { policies: [{ limit: 5, window: '1s', failureMode: 'shut' }] },
    `RateLimitConfigError: Invalid rate limit policy "default" on RateLimitModule options: failureMode must be 'open', 'closed' or 'local' (got "shut")`,
  ],
  [
    { headers: 'x-only' },
    invalid('headers', 'must be one of ietf, legacy, both, none (got "x-only")'),
  ],
  [
    { clock: 'ntp' },
    invalid('clock', `must be 'redis', 'local' or a function returning epoch ms (got "ntp")`),
  ],
  [
    { store: { decide: store.decide, reset: store.reset } },
    invalid('store', 'must implement RateLimitStore (decide, reset, close)'),
  ],
  [
    { store: { decide: store.decide, close: store.close } },
    invalid('store', 'must implement RateLimitStore (decide, reset, close)'),
  ],
  [
    { store: { reset: store.reset, close: store.close } },
    invalid('store', 'must implement RateLimitStore (decide, reset, close)'),
  ],
  [{ keyBy: 'ip' }, invalid('keyBy', 'must be a function')],
  [
    { redis: '' },
    invalid(
      'redis',
      'is an empty string (is REDIS_URL set but empty?): give a URL such as redis://host:6379, or leave redis out for the embedded store',
    ),
  ],
  [
    { redis: '  ' },
    invalid(
      'redis',
      'is an empty string (is REDIS_URL set but empty?): give a URL such as redis://host:6379, or leave redis out for the embedded store',
    ),
  ],
  [{ redis: 6379 }, invalid('redis', 'must be a URL, ioredis options or a client (got number)')],
  [{ redis: null }, invalid('redis', 'must be a URL, ioredis options or a client (got object)')],
  [{ defaults: null }, invalid('defaults', 'must be { algorithm?, scope? }')],
  [
    { policies: [{ limit: 1, window: 1, failureMode: 'local' }] },
    'RateLimitConfigError: Invalid rate limit policy "default" on RateLimitModule options: ' +
      "failureMode 'local' needs the module option instances: how many instances share the limits while the store is unavailable",
  ],
  [{ defaults: 'fixed-window' }, invalid('defaults', 'must be { algorithm?, scope? }')],
  [
    { defaults: { algorithm: 'gcra' } },
    invalid(
      'defaults.algorithm',
      'must be one of token-bucket, leaky-bucket, fixed-window, sliding-window-log, sliding-window-counter (got "gcra")',
    ),
  ],
  [
    { defaults: { scope: 'app' } },
    invalid('defaults.scope', `must be 'route' or 'global' (got "app")`),
  ],
  [{ skip: true }, invalid('skip', 'must be a function')],
  [{ onDecision: {} }, invalid('onDecision', 'must be a function')],
  ...[{ contextTypes: 'http' }, { contextTypes: [''] }, { contextTypes: ['http', 7] }].map(
    (options): [unknown, string] => [
      options,
      invalid(
        'contextTypes',
        `must be an array of context types such as 'http', 'graphql', 'ws', 'rpc' (got ${JSON.stringify(options.contextTypes)})`,
      ),
    ],
  ),
  [
    { limitedResponse: 429 },
    invalid(
      'limitedResponse',
      'must be a message or a function (context, denial) => body (got 429)',
    ),
  ],
  [
    { unavailableResponse: {} },
    invalid(
      'unavailableResponse',
      'must be a message or a function (context, denial) => body (got {})',
    ),
  ],
  ...[null, 'yes', { maxEntries: 0 }, { maxEntries: 2.5 }].map((denyCache): [unknown, string] => [
    { denyCache },
    invalid(
      'denyCache',
      `must be true, false or { maxEntries: a positive integer } (got ${JSON.stringify(denyCache)})`,
    ),
  ]),
  [
    { openApi: null },
    invalid('openApi', 'must be true, false or { limitedSchema?, unavailableSchema? }'),
  ],
  [
    { openApi: { limitedSchema: 'Body' } },
    invalid(
      'openApi.limitedSchema',
      'must be an OpenAPI Schema Object or a class described with @ApiProperty',
    ),
  ],
  [
    { policies: [{ limit: 1, window: '1m', cost: 2 }] },
    'RateLimitConfigError: Invalid rate limit policy "default" on RateLimitModule options: cost 2 exceeds what the policy can ever admit (1)',
  ],
];

describe('resolveOptions messages', () => {
  it.each(MISTAKES)('%p: %s', (options, expected) => {
    expect(message(options)).toBe(expected);
  });
});

describe('resolveOptions boundaries', () => {
  it.each([
    { prefix: 'x'.repeat(32) },
    { prefix: 'é'.repeat(16) },
    { prefix: 'app:rl' },
    { timeout: 0.5 },
    { timeout: 250, maxWait: 250 },
    { breaker: { failures: 1, halfOpenAfter: 0.5 } },
    { failureMode: 'local', instances: 1 },
    { failureMode: 'closed' },
    { headers: 'none' },
    { clock: 'local' },
    { clock: () => 0 },
    { ipv6Subnet: 32 },
    { ipv6Subnet: 128 },
    { store },
    { contextTypes: [] },
    { contextTypes: ['http', 'my-transport'] },
    { limitedResponse: 'slow down', unavailableResponse: () => ({}) },
    { denyCache: true },
    { denyCache: {} },
    { denyCache: { maxEntries: 1 } },
    { openApi: false },
    { openApi: { limitedSchema: class Body {}, unavailableSchema: { type: 'object' } } },
    // Module policies apply through the guard, which calls a limit function per request.
    { policies: [{ limit: () => 1, window: 1 }] },
    { redis: 'redis://127.0.0.1:6380' },
    { redis: {} },
    { defaults: { scope: 'route' } },
    { defaults: { algorithm: 'token-bucket' } },
    { defaults: { scope: 'global', algorithm: 'fixed-window' } },
    ...(['open', 'closed', 'local'] as const).map((failureMode) => ({
      policies: [{ limit: 1, window: 1, failureMode }],
      instances: 2,
    })),
  ])('accepts %p', (options) => {
    expect(message(options)).toBe('accepted');
  });

  it('defaults the key to the client IP and limits every transport', () => {
    expect(resolveOptions()).toMatchObject({
      keyBy: undefined,
      contextTypes: ['http', 'graphql', 'ws', 'rpc'],
      denyCacheEntries: 10_000,
      breaker: { failures: 3, halfOpenAfter: 500 },
    });
    expect(resolveOptions({ denyCache: {} }).denyCacheEntries).toBe(10_000);
    expect(resolveOptions({ denyCache: true }).denyCacheEntries).toBe(10_000);
    expect(resolveOptions({ breaker: { halfOpenAfter: 50 } }).breaker).toEqual({
      failures: 3,
      halfOpenAfter: 50,
    });
    expect(resolveOptions({ timeout: 1_999 }).maxWait).toBe(2_000);
    expect(resolveOptions({ timeout: 2_001 }).maxWait).toBe(2_001);
  });

  it('passes every given option through', () => {
    const functions = {
      keyBy: () => 'k',
      skip: () => false,
      onDecision: () => undefined,
      limitedResponse: () => 'limited',
      unavailableResponse: 'unavailable',
    };
    const policies = [{ limit: 5, window: '1s' }];
    const clock = () => 0;
    const resolved = resolveOptions({
      redis: 'redis://127.0.0.1:1',
      store,
      prefix: 'app',
      policies,
      failureMode: 'closed',
      timeout: 50,
      maxWait: 70,
      headers: 'both',
      dryRun: true,
      clock,
      guard: false,
      contextTypes: ['http'],
      denyCache: { maxEntries: 3 },
      defaults: { algorithm: 'token-bucket', scope: 'route' },
      ipv6Subnet: 56,
      openApi: { limitedSchema: { type: 'string' } },
      ...functions,
    } as unknown as RateLimitModuleOptions);
    expect(resolved).toEqual({
      redis: 'redis://127.0.0.1:1',
      store,
      prefix: 'app',
      policies,
      failureMode: 'closed',
      timeout: 50,
      maxWait: 70,
      breaker: { failures: 3, halfOpenAfter: 500 },
      instances: undefined,
      headers: 'both',
      dryRun: true,
      clock,
      denyCacheEntries: 3,
      guard: false,
      contextTypes: ['http'],
      defaults: { algorithm: 'token-bucket', scope: 'route' },
      ipv6Subnet: 56,
      openApi: { limitedSchema: { type: 'string' }, unavailableSchema: undefined },
      ...functions,
    });
    expect(resolveOptions({}).openApi).toEqual({});
    expect(resolveOptions({ openApi: false }).openApi).toBe(false);
    expect(resolveOptions({ dryRun: 'yes' } as never).dryRun).toBe(false);
    expect(resolveOptions({ guard: undefined }).guard).toBe(true);
  });
});

describe('resolvePolicies', () => {
  const source = {
    label: 'UsersController.find',
    routeId: 'UsersController.find',
    defaultScope: 'route' as const,
  };

  it.each([
    [{ limit: 1.5, window: '1m' }, 'limit'],
    [{ limit: 10, window: '1 minute' }, 'window'],
    [{ limit: 10, window: '1m', algorithm: 'gcra' }, 'algorithm'],
    [{ limit: 10, window: '1m', burst: 0 }, 'burst'],
    [{ limit: 10, window: '1m', cost: 11 }, 'cost'],
    [{ limit: 10, window: '1m', cost: -1 }, 'cost'],
    [{ limit: 10, window: '1m', name: 'has "quotes"' }, 'name'],
    [{ limit: 10, window: '1m', scope: 'cluster' }, 'scope'],
  ])('rejects %p with a message naming the route and %s', (policy, field) => {
    expect(() => resolvePolicies([policy as never], source)).toThrow(
      new RegExp(`on UsersController\\.find: ${field} `),
    );
  });

  it('rejects duplicate names on one route', () => {
    expect(() =>
      resolvePolicies(
        [
          { limit: 1, window: 1 },
          { limit: 2, window: 2 },
        ],
        source,
      ),
    ).toThrow('name is used twice');
  });

  it('resolves defaults and builds per-route keys for route scope only', () => {
    const [route, global] = resolvePolicies(
      [
        { limit: 10, window: '1m' },
        { name: 'g', limit: 5, window: 500, scope: 'global', algorithm: 'token-bucket', burst: 8 },
      ],
      source,
    );
    expect(route).toMatchObject({
      name: 'default',
      algorithm: 'sliding-window-counter',
      windowMs: 60_000,
      burst: 10,
      cost: 1,
      scope: 'route',
      keySuffix: ':default:swc2:UsersController.find',
    });
    expect(global).toMatchObject({ burst: 8, maxCost: 8, keySuffix: ':g:tb2' });
  });
});
