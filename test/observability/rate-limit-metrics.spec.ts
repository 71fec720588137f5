import { jest } from '@jest/globals';
import { CircuitOpenError } from '../../lib/resilience/circuit-breaker.js';
import { DeadlineExceededError } from '../../lib/resilience/deadline.js';
import {
  createMetrics,
  failureKind,
  globalMeterProvider,
  type ObservableResult,
  type RateLimitMeterProvider,
} from '../../lib/observability/rate-limit-metrics.js';
import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';
import type { PolicyResult } from '../../lib/interfaces/rate-limit-decision.interface.js';
import type { RoutePlan } from '../../lib/guard/route-planner.js';

describe('failureKind', () => {
  const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

  it.each([
    [new DeadlineExceededError('no answer within 100 ms (store silent)'), 'timeout'],
    [new CircuitOpenError('circuit breaker open'), 'circuit_open'],
    [withCode('ECONNREFUSED'), 'disconnected'],
    [withCode('ECONNRESET'), 'disconnected'],
    [withCode('EPIPE'), 'disconnected'],
    [withCode('ENOTFOUND'), 'disconnected'],
    [withCode('EHOSTUNREACH'), 'disconnected'],
    [withCode('ENETUNREACH'), 'disconnected'],
    [withCode('ECONNABORTED'), 'disconnected'],
    [withCode('ERR_UNKNOWN'), 'error'],
    // Only a string message is read.
    [{ message: ['Connection is closed.'] }, 'error'],
    [new Error('Redis connection is reconnecting'), 'disconnected'],
    [new Error('Connection is closed.'), 'disconnected'],
    [new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'disconnected'],
    [new Error('Reached the max retries per request limit (which is 0).'), 'disconnected'],
    [new Error('NOPERM User default has no permissions to run the evalsha command'), 'error'],
    [new Error('BUSY Redis is busy running a script'), 'error'],
    ['a string thrown', 'error'],
    [undefined, 'error'],
  ])('%p is %s', (error, kind) => {
    expect(failureKind(error)).toBe(kind);
  });
});

describe('createMetrics', () => {
  const meterProvider = {
    getMeter: () => ({
      createCounter: () => ({ add: () => undefined }),
      createHistogram: () => ({ record: () => undefined }),
      createObservableCounter: () => ({ addCallback: () => undefined }),
    }),
  };

  it('is off unless asked', () => {
    expect(createMetrics(undefined, meterProvider)).toBeUndefined();
    expect(createMetrics(false, meterProvider)).toBeUndefined();
  });

  it.each([0, 0.2, 1])('takes a nearLimitShare of %p', (nearLimitShare) => {
    expect(createMetrics({ meterProvider, nearLimitShare }, undefined)).toBeDefined();
  });

  it.each([
    [{ meterProvider, nearLimitShare: -0.1 }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: 1.5 }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: NaN }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: '0.2' }, 'nearLimitShare must be a number from 0 to 1'],
    [true, 'needs a meterProvider, or RateLimitModule to find the global one'],
    [{ meterProvider: 'prometheus' }, 'meterProvider must be an OpenTelemetry MeterProvider'],
    [{ meterProvider: {} }, 'meterProvider must be an OpenTelemetry MeterProvider'],
    [null, 'must be true, false or { meterProvider?, nearLimitShare? }'],
  ])('refuses %p', (option, problem) => {
    expect(() => createMetrics(option, undefined)).toThrow(RateLimitConfigError);
    expect(() => createMetrics(option, undefined)).toThrow(
      `Invalid RateLimitModule option metrics: ${problem}`,
    );
  });
});

describe('RateLimitMetrics', () => {
  type Attributes = Readonly<Record<string, string>>;
  /** A MeterProvider that keeps every instrument made and everything they were told. */
  const recordingProvider = () => {
    const made: { kind: string; name: string; options: unknown }[] = [];
    const observers = new Map<string, (result: ObservableResult) => void>();
    const recorded: [string, number, Attributes | undefined][] = [];
    const provider: RateLimitMeterProvider = {
      getMeter: (name) => {
        made.push({ kind: 'meter', name, options: undefined });
        return {
          createCounter: (counter, options) => {
            made.push({ kind: 'counter', name: counter, options });
            return { add: (value, attributes) => void recorded.push([counter, value, attributes]) };
          },
          createHistogram: (histogram, options) => {
            made.push({ kind: 'histogram', name: histogram, options });
            return {
              record: (value, attributes) => void recorded.push([histogram, value, attributes]),
            };
          },
          createObservableCounter: (counter, options) => {
            made.push({ kind: 'observable counter', name: counter, options });
            return { addCallback: (callback) => void observers.set(counter, callback) };
          },
        };
      },
    };
    /** What the observable counter `name` reports when collected. */
    const collect = (name: string) => {
      const observed: [number, Attributes | undefined][] = [];
      observers.get(name)!({
        observe: (value, attributes) => void observed.push([value, attributes]),
      });
      return observed;
    };
    return { provider, made, recorded, collect };
  };

  /** A route with an enforced policy and a shadow one: what the metrics read of a plan. */
  const planOf = (route: string) =>
    ({
      route,
      policies: [
        { name: 'enforced', shadow: false },
        { name: 'trial', shadow: true },
      ],
    }) as unknown as RoutePlan;
  const result = (allowed: boolean, remaining: number): PolicyResult => ({
    policy: 'p',
    allowed,
    limit: 10,
    window: 60_000,
    capacity: 10,
    remaining,
    resetMs: 1_000,
    retryAfterMs: 0,
    delayMs: 0,
  });
  const attributes = (route: string, policy: string, outcome?: string) => ({
    'rate_limiting.route': route,
    'rate_limiting.policy': policy,
    ...(outcome && { 'rate_limiting.outcome': outcome }),
  });

  it('makes its four instruments once per provider, as the README lists them', () => {
    const { provider, made } = recordingProvider();
    createMetrics({ meterProvider: provider }, undefined);
    createMetrics({ meterProvider: provider }, undefined);
    expect(made).toEqual([
      { kind: 'meter', name: 'nestjs-redis-rate-limiter', options: undefined },
      {
        kind: 'observable counter',
        name: 'rate_limiting.decisions',
        options: {
          description: 'Decisions of the guard, one per policy of each request decided.',
          unit: '{decision}',
        },
      },
      {
        kind: 'observable counter',
        name: 'rate_limiting.near_limit_decisions',
        options: {
          description:
            'Admitted decisions that left a policy at most nearLimitShare of its capacity.',
          unit: '{decision}',
        },
      },
      {
        kind: 'histogram',
        name: 'rate_limiting.store.operation.duration',
        options: {
          description: 'Time from asking the store to hearing its answer or giving up on it.',
          unit: 's',
          advice: {
            explicitBucketBoundaries: [
              0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
              2.5,
            ],
          },
        },
      },
      {
        kind: 'counter',
        name: 'rate_limiting.store.failures',
        options: {
          description:
            'Store calls that failed, by kind; circuit_open: refused by the open breaker.',
          unit: '{failure}',
        },
      },
    ]);
  });

  it("counts decisions per route, policy and outcome, a shadow policy's by its own verdict", () => {
    const { provider, collect } = recordingProvider();
    const metrics = createMetrics({ meterProvider: provider }, undefined)!;
    const [a, b] = [planOf('A.a'), planOf('B.b')];
    metrics.decided(a, 'allowed', { allowed: true, results: [result(true, 9), result(false, 0)] });
    metrics.decided(a, 'allowed', { allowed: true, results: [result(true, 8), result(true, 9)] });
    metrics.decided(a, 'denied', { allowed: false, results: [result(false, 0), result(true, 9)] });
    metrics.decided(b, 'failed_open');
    expect(collect('rate_limiting.decisions')).toEqual([
      [2, attributes('A.a', 'enforced', 'allowed')],
      [1, attributes('A.a', 'enforced', 'denied')],
      [2, attributes('A.a', 'trial', 'allowed')],
      [1, attributes('A.a', 'trial', 'shadow_denied')],
      [1, attributes('B.b', 'enforced', 'failed_open')],
      [1, attributes('B.b', 'trial', 'failed_open')],
    ]);
  });

  it('reports every outcome under its own name', () => {
    const { provider, collect } = recordingProvider();
    const metrics = createMetrics({ meterProvider: provider }, undefined)!;
    const outcomes = [
      'allowed',
      'delayed',
      'denied',
      'denied_cached',
      'dry_run_denied',
      'failed_open',
      'failed_closed',
    ] as const;
    for (const outcome of outcomes) metrics.decided(planOf('A.a'), outcome);
    expect(collect('rate_limiting.decisions')).toEqual(
      outcomes
        .flatMap((outcome) => [[1, attributes('A.a', 'enforced', outcome)]])
        .concat(outcomes.map((outcome) => [1, attributes('A.a', 'trial', outcome)])),
    );
  });

  it('counts on when an app is started again on the same provider', () => {
    const { provider, collect } = recordingProvider();
    for (let start = 0; start < 2; start++) {
      createMetrics({ meterProvider: provider }, undefined)!.decided(planOf('A.a'), 'allowed');
    }
    expect(collect('rate_limiting.decisions')).toEqual([
      [2, attributes('A.a', 'enforced', 'allowed')],
      [2, attributes('A.a', 'trial', 'allowed')],
    ]);
  });

  it('counts as near the limit an admitted decision leaving at most nearLimitShare of capacity', () => {
    const { provider, collect } = recordingProvider();
    const metrics = createMetrics({ meterProvider: provider, nearLimitShare: 0.3 }, undefined)!;
    const plan = planOf('A.a');
    expect(collect('rate_limiting.near_limit_decisions')).toEqual([]);
    // 3 of 10 left is at the share, 4 is above it; a denial or a failure is never counted.
    for (const remaining of [4, 3, 0]) {
      metrics.decided(plan, 'allowed', {
        allowed: true,
        results: [result(true, remaining), result(true, 9)],
      });
    }
    metrics.decided(plan, 'delayed', {
      allowed: true,
      results: [result(true, 2), result(true, 9)],
    });
    metrics.decided(plan, 'denied', {
      allowed: false,
      results: [result(false, 0), result(true, 9)],
    });
    metrics.decided(plan, 'dry_run_denied', {
      allowed: false,
      results: [result(false, 0), result(false, 0)],
    });
    metrics.decided(plan, 'failed_open');
    expect(collect('rate_limiting.near_limit_decisions')).toEqual([
      [3, attributes('A.a', 'enforced')],
    ]);
  });

  it('records store durations in seconds, and failures by kind, a refused call without a duration', () => {
    const { provider, recorded } = recordingProvider();
    const metrics = createMetrics({ meterProvider: provider }, undefined)!;
    const realNow = performance.now;
    performance.now = () => 10_000;
    try {
      metrics.storeAnswered(9_998.5);
      metrics.storeFailed(new DeadlineExceededError('no answer'), 9_900);
      metrics.storeFailed(new CircuitOpenError('circuit breaker open'), 9_999);
      metrics.storeFailed(Object.assign(new Error('read'), { code: 'ECONNRESET' }), 9_999);
      metrics.storeFailed(new Error('NOPERM'), 9_999);
    } finally {
      performance.now = realNow;
    }
    expect(recorded).toEqual([
      ['rate_limiting.store.operation.duration', 0.0015, {}],
      ['rate_limiting.store.failures', 1, { 'error.type': 'timeout' }],
      ['rate_limiting.store.operation.duration', 0.1, { 'error.type': 'timeout' }],
      ['rate_limiting.store.failures', 1, { 'error.type': 'circuit_open' }],
      ['rate_limiting.store.failures', 1, { 'error.type': 'disconnected' }],
      ['rate_limiting.store.operation.duration', 0.001, { 'error.type': 'disconnected' }],
      ['rate_limiting.store.failures', 1, { 'error.type': 'error' }],
      ['rate_limiting.store.operation.duration', 0.001, { 'error.type': 'error' }],
    ]);
  });
});

describe('globalMeterProvider', () => {
  const meterProvider = { getMeter: () => ({}) as never };

  it.each([undefined, false, { meterProvider }, { meterProvider, nearLimitShare: 0.5 }])(
    'loads nothing for a metrics option of %p',
    async (option) => {
      await expect(globalMeterProvider(option)).resolves.toBeUndefined();
    },
  );

  it.each([true, {}, { nearLimitShare: 0.5 }])(
    "is the OpenTelemetry API's global provider for a metrics option of %p",
    async (option) => {
      const { metrics } = await import('@opentelemetry/api');
      await expect(globalMeterProvider(option)).resolves.toBe(metrics.getMeterProvider());
    },
  );

  it('names the package it could not load', async () => {
    jest.unstable_mockModule('@opentelemetry/api', () => {
      throw new Error("Cannot find package '@opentelemetry/api'");
    });
    try {
      const failure = globalMeterProvider(true);
      await expect(failure).rejects.toThrow(RateLimitConfigError);
      await expect(failure).rejects.toThrow(
        "Invalid RateLimitModule option metrics: without a meterProvider it needs the @opentelemetry/api package (Cannot find package '@opentelemetry/api')",
      );
    } finally {
      jest.resetModules();
    }
  });
});
