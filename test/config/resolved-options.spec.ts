import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';

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
    [{ failureMode: 'open', instances: 3 }, 'instances'],
    [{ headers: 'x-only' }, 'headers'],
    [{ clock: 'ntp' }, 'clock'],
    [{ keyBy: 'ip' }, 'keyBy'],
    [{ onDecision: 'log' }, 'onDecision'],
    [{ limitedResponse: 429 }, 'limitedResponse'],
    [{ unavailableResponse: {} }, 'unavailableResponse'],
    [{ denyCache: 'yes' }, 'denyCache'],
    [{ denyCache: { maxEntries: 0 } }, 'denyCache'],
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
