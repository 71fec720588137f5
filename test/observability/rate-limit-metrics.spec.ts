import { RateLimitMetrics } from '../../lib/observability/rate-limit-metrics.js';
import type { PolicyResult } from '../../lib/interfaces/rate-limit-decision.interface.js';
import type { RoutePlan } from '../../lib/guard/route-planner.js';
import type {
  ObservableResult,
  RateLimitMeterProvider,
} from '../../lib/interfaces/rate-limit-metrics.interface.js';

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
    new RateLimitMetrics(provider, 0.2);
    new RateLimitMetrics(provider, 0.2);
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
    const metrics = new RateLimitMetrics(provider, 0.2);
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
    const metrics = new RateLimitMetrics(provider, 0.2);
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
      new RateLimitMetrics(provider, 0.2).decided(planOf('A.a'), 'allowed');
    }
    expect(collect('rate_limiting.decisions')).toEqual([
      [2, attributes('A.a', 'enforced', 'allowed')],
      [2, attributes('A.a', 'trial', 'allowed')],
    ]);
  });

  it('counts as near the limit an admitted decision leaving at most nearLimitShare of capacity', () => {
    const { provider, collect } = recordingProvider();
    const metrics = new RateLimitMetrics(provider, 0.3);
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
    const metrics = new RateLimitMetrics(provider, 0.2);
    const realNow = performance.now;
    performance.now = () => 10_000;
    try {
      metrics.storeAnswered(9_998.5);
      metrics.storeFailed('timeout', 9_900);
      metrics.storeFailed('circuit_open', 9_999);
      metrics.storeFailed('disconnected', 9_999);
      metrics.storeFailed('error', 9_999);
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
