import { type ExecutionContext, InternalServerErrorException, Logger } from '@nestjs/common';
// File by file, not through lib/index.js (see test/support/limiters.ts).
import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { RequestLimits } from '../../lib/guard/request-limits.js';
import { type PolicySource, resolvePolicies } from '../../lib/config/resolved-policy.js';

const ROUTE: PolicySource = {
  label: 'PlansController.find',
  routeId: 'PlansController.find',
  defaultScope: 'route',
  perRequest: true,
};
const SERVICE: PolicySource = { label: 'RateLimiter call', defaultScope: 'global' };

/** A context whose request carries the user's plan, as an auth guard would leave it. */
const contextFor = (plan: string) =>
  ({
    switchToHttp: () => ({ getRequest: () => ({ user: { plan } }) }),
  }) as unknown as ExecutionContext;
const planOf = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<{ user: { plan: string } }>().user.plan;
const LIMITS: Record<string, number> = { free: 2, pro: 10 };

/** A Logger whose warnings are kept. */
function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = new Logger('test');
  logger.warn = (message: unknown) => void warnings.push(String(message));
  return { logger, warnings };
}

const limitsFor = (policies: RateLimitPolicy[], logger = recordingLogger().logger) =>
  new RequestLimits(ROUTE.label, resolvePolicies(policies, ROUTE), logger);

describe('policies with limit or burst functions, at start-up', () => {
  it('makes a template of such a policy, and sizes every other one at once', () => {
    const [dynamic, fixed] = resolvePolicies(
      [
        { name: 'plan', limit: (context) => LIMITS[planOf(context)], window: '1m' },
        { name: 'fixed', algorithm: 'token-bucket', limit: 5, burst: 8, window: '1m' },
      ],
      ROUTE,
    );
    expect(dynamic.perRequest).toBeDefined();
    expect(dynamic.scriptArgs).toEqual([]);
    expect(fixed).toMatchObject({
      limit: 5,
      burst: 8,
      maxCost: 8,
      scriptArgs: ['5', '60000', '8'],
      perRequest: undefined,
    });
  });

  it('refuses a function for window, naming the field and what may be one', () => {
    const window = (() => 1_000) as unknown as number;
    expect(() => resolvePolicies([{ limit: 1, window }], ROUTE)).toThrow(
      new RateLimitConfigError(
        'Invalid rate limit policy "default" on PlansController.find: window must be fixed: a function is allowed only for limit and burst',
      ),
    );
  });

  it('offers a function for a bad limit or burst only where the guard applies the policy', () => {
    const policy: RateLimitPolicy = { algorithm: 'token-bucket', limit: 0, window: 1 };
    expect(() => resolvePolicies([policy], ROUTE)).toThrow(
      'limit must be a positive integer or a function (got 0)',
    );
    expect(() => resolvePolicies([{ ...policy, limit: 1, burst: 0.5 }], ROUTE)).toThrow(
      'burst must be a positive integer or a function (got 0.5)',
    );
    expect(() => resolvePolicies([policy], SERVICE)).toThrow(
      'limit must be a positive integer (got 0)',
    );
  });

  it('refuses a function where no request can call it: in a RateLimiter call', () => {
    expect(() => resolvePolicies([{ limit: () => 1, window: '1m' }], SERVICE)).toThrow(
      new RateLimitConfigError(
        'Invalid rate limit policy "default" on RateLimiter call: limit is a function, which only RateLimitGuard can call (with the request); call it yourself and pass the number it gives',
      ),
    );
    expect(() =>
      resolvePolicies(
        [{ algorithm: 'token-bucket', limit: 1, burst: () => 2, window: 1 }],
        SERVICE,
      ),
    ).toThrow(/"default" on RateLimiter call: burst is a function/);
  });

  it('still checks a fixed cost against a fixed capacity, and leaves a per-request one to the request', () => {
    expect(() => resolvePolicies([{ limit: 2, window: '1m', cost: 3 }], ROUTE)).toThrow(
      /cost 3 exceeds what the policy can ever admit \(2\)/,
    );
    expect(() => resolvePolicies([{ limit: () => 2, window: '1m', cost: 3 }], ROUTE)).not.toThrow();
  });
});

describe('RequestLimits', () => {
  it('sizes a policy for each request from a sync or an async function, reusing one object per size', async () => {
    const limits = limitsFor([
      { name: 'sync', limit: (context) => LIMITS[planOf(context)], window: '1m' },
      {
        name: 'async',
        algorithm: 'token-bucket',
        limit: async (context) => LIMITS[planOf(context)] * 2,
        window: '1m',
      },
      { name: 'fixed', limit: 7, window: '1m' },
    ]);
    const free = await limits.resolve(contextFor('free'));
    const pro = await limits.resolve(contextFor('pro'));
    expect(free.map(({ limit, burst, scriptArgs }) => [limit, burst, scriptArgs])).toEqual([
      [2, 2, ['2', '60000', '2']],
      // burst defaults to the limit as resolved for the request
      [4, 4, ['4', '60000', '4']],
      [7, 7, ['7', '60000', '7']],
    ]);
    expect(pro.map(({ limit, maxCost, perRequest }) => [limit, maxCost, perRequest])).toEqual([
      [10, 10, undefined],
      [20, 20, undefined],
      [7, 7, undefined],
    ]);
    const again = await limits.resolve(contextFor('free'));
    again.forEach((policy, i) => expect(policy).toBe(free[i]));
  });

  it('answers at once, without a promise, when every function answers synchronously', async () => {
    const sync = limitsFor([{ limit: (context) => LIMITS[planOf(context)], window: '1m' }]);
    const sized = sync.resolve(contextFor('pro'));
    expect(Array.isArray(sized) && sized[0].limit).toBe(10);
    const async = limitsFor([{ limit: async () => 3, window: '1m' }]);
    const later = async.resolve(contextFor('pro'));
    expect(later).toBeInstanceOf(Promise);
    expect((await later)[0].limit).toBe(3);
  });

  it('leaves no rejection unheard when one function throws while another is still pending', async () => {
    const unheard: unknown[] = [];
    const listen = (reason: unknown) => void unheard.push(reason);
    process.on('unhandledRejection', listen);
    try {
      const limits = limitsFor([
        { name: 'first', limit: () => Promise.reject(new Error('slow failure')), window: '1m' },
        {
          name: 'second',
          algorithm: 'token-bucket',
          limit: () => Promise.reject(new Error('slow failure')),
          burst: () => {
            throw new Error('fast failure');
          },
          window: '1m',
        },
      ]);
      await expect(limits.resolve(contextFor('pro'))).rejects.toThrow(
        'Rate limit policy "second" on PlansController.find: its burst function failed',
      );
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unheard).toEqual([]);
    } finally {
      process.off('unhandledRejection', listen);
    }
  });

  it('calls a burst function for the buckets only, which alone have a burst', async () => {
    let calls = 0;
    const burst = (context: ExecutionContext) => (calls++, LIMITS[planOf(context)] * 3);
    const [bucket, window] = await limitsFor([
      { name: 'bucket', algorithm: 'leaky-bucket', limit: 4, burst, window: '1s' },
      { name: 'window', algorithm: 'fixed-window', limit: () => 4, burst, window: '1s' },
    ]).resolve(contextFor('pro'));
    expect([bucket.limit, bucket.burst, bucket.maxCost]).toEqual([4, 30, 30]);
    expect([window.limit, window.burst, window.maxCost]).toEqual([4, 4, 4]);
    expect(calls).toBe(1);
  });

  it.each<[string, (context: ExecutionContext) => number | Promise<number>, string]>([
    ['zero', () => 0, 'its limit function gave 0, not a positive integer'],
    ['a fraction', () => 2.5, 'its limit function gave 2.5, not a positive integer'],
    ['a string', () => '10' as never, 'its limit function gave "10", not a positive integer'],
    [
      'undefined (an unknown plan)',
      (context) => LIMITS[planOf(context)],
      'its limit function gave undefined, not a positive integer',
    ],
    ['NaN', () => NaN, 'its limit function gave NaN, not a positive integer'],
    ['a bigint', () => 10n as never, 'its limit function gave 10n, not a positive integer'],
    [
      'a string of 40 characters quoted',
      () => 'x'.repeat(38) as never,
      `its limit function gave "${'x'.repeat(38)}", not a positive integer`,
    ],
    [
      'a longer one, cut short',
      () => 'x'.repeat(50) as never,
      `its limit function gave "${'x'.repeat(39)}…, not a positive integer`,
    ],
    [
      'an unsafe integer',
      () => 2 ** 60,
      `its limit function gave ${2 ** 60}, not a positive integer`,
    ],
    [
      'a throw',
      () => {
        throw new Error('plans table unreachable');
      },
      'its limit function failed',
    ],
    ['a rejection', () => Promise.reject(new Error('timeout')), 'its limit function failed'],
  ])('answers %s with a 500 naming route and policy', async (_, limit, problem) => {
    const { logger, warnings } = recordingLogger();
    const limits = limitsFor([{ name: 'plan', limit, window: '1m' }], logger);
    const failure = limits.resolve(contextFor('enterprise'));
    await expect(failure).rejects.toThrow(InternalServerErrorException);
    await expect(failure).rejects.toThrow(
      `Rate limit policy "plan" on PlansController.find: ${problem}`,
    );
    expect(warnings).toEqual([
      expect.stringContaining(`Rate limit policy "plan" on PlansController.find: ${problem}`),
    ]);
    expect(warnings[0]).toMatch(/nothing was charged$/);
  });

  it('logs a bad result as it answers it, and keeps what a function threw as the cause', async () => {
    const { logger, warnings } = recordingLogger();
    await expect(
      limitsFor([{ name: 'plan', limit: () => 0, window: '1m' }], logger).resolve(
        contextFor('pro'),
      ),
    ).rejects.toThrow('its limit function gave 0, not a positive integer');
    expect(warnings).toEqual([
      'Rate limit policy "plan" on PlansController.find: its limit function gave 0, not a positive integer; nothing was charged',
    ]);
    const thrown = new Error('plans table unreachable');
    const failure = limitsFor([
      {
        limit: () => {
          throw thrown;
        },
        window: '1m',
      },
    ]).resolve(contextFor('pro'));
    await expect(failure).rejects.toMatchObject({ cause: thrown });
  });

  it('keeps 256 sizes per policy, then starts over', async () => {
    const limits = limitsFor([{ limit: (context) => Number(planOf(context)), window: '1m' }]);
    const sizeOf = async (n: number) => (await limits.resolve(contextFor(String(n))))[0];
    const first = await sizeOf(1);
    for (let n = 2; n <= 256; n++) await sizeOf(n);
    expect(await sizeOf(1)).toBe(first);
    await sizeOf(257);
    expect(await sizeOf(1)).not.toBe(first);
  });

  it('names a bad burst as such, logs what a function threw, and logs a recurring failure at most every 5 s', async () => {
    const { logger, warnings } = recordingLogger();
    const limits = limitsFor(
      [
        {
          name: 'queue',
          algorithm: 'leaky-bucket',
          limit: 1,
          burst: () => {
            throw new Error('plans table unreachable');
          },
          window: '1s',
        },
      ],
      logger,
    );
    for (let i = 0; i < 3; i++) {
      await expect(limits.resolve(contextFor('pro'))).rejects.toThrow(
        'Rate limit policy "queue" on PlansController.find: its burst function failed',
      );
    }
    expect(warnings).toEqual([
      'Rate limit policy "queue" on PlansController.find: its burst function failed (plans table unreachable); nothing was charged',
    ]);
  });

  it('keeps a bounded number of sizes per policy', async () => {
    const limits = limitsFor([{ limit: (context) => Number(planOf(context)), window: '1m' }]);
    const [first] = await limits.resolve(contextFor('1'));
    for (let n = 2; n <= 300; n++) await limits.resolve(contextFor(String(n)));
    const [later] = await limits.resolve(contextFor('1'));
    expect(later).not.toBe(first);
    expect(later).toEqual(first);
  });
});
