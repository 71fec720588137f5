import { CircuitOpenError } from '../resilience/circuit-breaker.js';
import { DeadlineExceededError } from '../resilience/deadline.js';
import { RateLimitConfigError } from '../config/rate-limit-config.error.js';
import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import type { RateLimitOutcome } from '../interfaces/rate-limit-event.interface.js';
import type { RoutePlan } from '../guard/route-planner.js';

/**
 * What the limiter needs of an OpenTelemetry `MeterProvider` (the API's or the SDK's fits).
 * Written out, so that the package's types do not name `@opentelemetry/api`, an optional peer.
 */
export interface RateLimitMeterProvider {
  getMeter(name: string, version?: string): RateLimitMeter;
}

type Attributes = Readonly<Record<string, string>>;

/** The part of an OpenTelemetry `Meter` the limiter uses. */
export interface RateLimitMeter {
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { add(value: number, attributes?: Attributes): void };
  createHistogram(
    name: string,
    options?: {
      description?: string;
      unit?: string;
      advice?: { explicitBucketBoundaries?: number[] };
    },
  ): { record(value: number, attributes?: Attributes): void };
  createObservableCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { addCallback(callback: (result: ObservableResult) => void): void };
}

/** What an observable instrument's callback reports to. */
export interface ObservableResult {
  observe(value: number, attributes?: Attributes): void;
}

/** The `metrics` option in its object form. */
export interface RateLimitMetricsOptions {
  /**
   * Where the instruments come from.
   * @default the global MeterProvider of `@opentelemetry/api`, as registered when the module starts
   */
  meterProvider?: RateLimitMeterProvider;
  /**
   * An admitted request counts in `rate_limiting.near_limit_decisions` when a policy has at
   * most this share of its capacity (the limit; the burst for the buckets) left.
   * @default 0.2
   */
  nearLimitShare?: number;
}

const DEFAULT_NEAR_LIMIT_SHARE = 0.2;

/** The metrics' names, as listed in the README. */
export const METRIC_NAMES = {
  decisions: 'rate_limiting.decisions',
  nearLimit: 'rate_limiting.near_limit_decisions',
  storeDuration: 'rate_limiting.store.operation.duration',
  storeFailures: 'rate_limiting.store.failures',
} as const;

/** Why a store call failed, in the `error.type` attribute. */
export type StoreFailureKind = 'timeout' | 'disconnected' | 'error' | 'circuit_open';

const OUTCOMES: readonly RateLimitOutcome[] = [
  'allowed',
  'delayed',
  'denied',
  'denied_cached',
  'dry_run_denied',
  'failed_open',
  'failed_closed',
  'shadow_denied',
];
const FAILURE_KINDS: readonly StoreFailureKind[] = [
  'timeout',
  'disconnected',
  'error',
  'circuit_open',
];

/** Seconds: a healthy Redis answers in well under a millisecond, a failing one in `timeout`. */
const DURATION_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];

/** Node's codes for a connection refused, lost or never made. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
/**
 * How ioredis (and RedisStore, which refuses while its client is not ready) say the
 * connection is gone; matched by text since they carry no code.
 */
const DISCONNECTED = /connection is (?!ready)|stream isn't writeable|max retries per request/i;

/** One policy of one route: what it has counted, and its attribute sets, built once. */
interface PolicyTally {
  readonly decisions: Record<RateLimitOutcome, number>;
  readonly decisionAttributes: Readonly<Record<RateLimitOutcome, Attributes>>;
  nearLimit: number;
  readonly nearLimitAttributes: Attributes;
}

/**
 * The limiter's OpenTelemetry instruments. Decisions are tallied here, in a number per
 * route, policy and outcome, and reported by observable counters when the metrics are
 * collected: a request costs a few increments, where a synchronous counter's add() would
 * hash its attributes every time. Store calls go to the SDK as they happen (a histogram
 * cannot be observed), with attribute sets built once.
 */
export class RateLimitMetrics {
  private readonly instruments: Instruments;
  /** This limiter's view of the shared tallies: by route id, per policy in the route's order. */
  private readonly routes = new Map<string, PolicyTally[]>();
  private readonly answered: Attributes = {};
  private readonly failures = byKey(FAILURE_KINDS, (kind) => ({ 'error.type': kind }));

  constructor(
    provider: RateLimitMeterProvider,
    private readonly nearLimitShare: number,
  ) {
    this.instruments = instrumentsOf(provider);
  }

  /** Counts one decision of the guard on `plan`: `outcome`, or a shadow policy's own. */
  decided(plan: RoutePlan, outcome: RateLimitOutcome, decision?: RateLimitDecision): void {
    const tallies = this.routes.get(plan.route) ?? this.tally(plan);
    const { policies } = plan;
    for (let i = 0; i < policies.length; i++) {
      const result = decision?.results[i];
      const own =
        result && policies[i].shadow ? (result.allowed ? 'allowed' : 'shadow_denied') : outcome;
      tallies[i].decisions[own]++;
      if (
        result &&
        (own === 'allowed' || own === 'delayed') &&
        result.remaining <= this.nearLimitShare * result.capacity
      ) {
        tallies[i].nearLimit++;
      }
    }
  }

  /** A store call asked at `askedAt` (performance.now()) was answered. */
  storeAnswered(askedAt: number): void {
    this.instruments.storeDuration.record((performance.now() - askedAt) / 1_000, this.answered);
  }

  /** A store call asked at `askedAt` failed, or the open breaker refused it. */
  storeFailed(error: unknown, askedAt: number): void {
    const attributes = this.failures[failureKind(error)];
    this.instruments.storeFailures.add(1, attributes);
    // A refused call never reached the store: it has no duration.
    if (!(error instanceof CircuitOpenError)) {
      this.instruments.storeDuration.record((performance.now() - askedAt) / 1_000, attributes);
    }
  }

  private tally({ route, policies }: RoutePlan): PolicyTally[] {
    const shared = this.instruments.routes;
    const byPolicy = shared.get(route) ?? new Map<string, PolicyTally>();
    shared.set(route, byPolicy);
    const tallies = policies.map(({ name }) => {
      let tally = byPolicy.get(name);
      if (!tally) {
        tally = {
          decisions: byKey(OUTCOMES, () => 0),
          decisionAttributes: byKey(OUTCOMES, (outcome) => ({
            'rate_limiting.route': route,
            'rate_limiting.policy': name,
            'rate_limiting.outcome': outcome,
          })),
          nearLimit: 0,
          nearLimitAttributes: { 'rate_limiting.route': route, 'rate_limiting.policy': name },
        };
        byPolicy.set(name, tally);
      }
      return tally;
    });
    this.routes.set(route, tallies);
    return tallies;
  }
}

/** The instruments on one MeterProvider, with the tallies its observable counters report. */
interface Instruments {
  /** By route id, then policy name. */
  readonly routes: Map<string, Map<string, PolicyTally>>;
  readonly storeDuration: ReturnType<RateLimitMeter['createHistogram']>;
  readonly storeFailures: ReturnType<RateLimitMeter['createCounter']>;
}

/**
 * One set per provider, shared by every limiter on it: an app started again in the same
 * process (tests, hot reload) counts on, as synchronous counters would, rather than adding a
 * second callback whose observations of the same attribute sets would replace the first's.
 */
const instrumentsByProvider = new WeakMap<RateLimitMeterProvider, Instruments>();

function instrumentsOf(provider: RateLimitMeterProvider): Instruments {
  const known = instrumentsByProvider.get(provider);
  if (known) return known;
  const meter = provider.getMeter('nestjs-redis-rate-limiter');
  const routes = new Map<string, Map<string, PolicyTally>>();
  const tallies = function* () {
    for (const byPolicy of routes.values()) yield* byPolicy.values();
  };
  meter
    .createObservableCounter(METRIC_NAMES.decisions, {
      description: 'Decisions of the guard, one per policy of each request decided.',
      unit: '{decision}',
    })
    .addCallback((result) => {
      for (const tally of tallies()) {
        for (const outcome of OUTCOMES) {
          const count = tally.decisions[outcome];
          if (count > 0) result.observe(count, tally.decisionAttributes[outcome]);
        }
      }
    });
  meter
    .createObservableCounter(METRIC_NAMES.nearLimit, {
      description: 'Admitted decisions that left a policy at most nearLimitShare of its capacity.',
      unit: '{decision}',
    })
    .addCallback((result) => {
      for (const tally of tallies()) {
        if (tally.nearLimit > 0) result.observe(tally.nearLimit, tally.nearLimitAttributes);
      }
    });
  const instruments: Instruments = {
    routes,
    storeDuration: meter.createHistogram(METRIC_NAMES.storeDuration, {
      description: 'Time from asking the store to hearing its answer or giving up on it.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    storeFailures: meter.createCounter(METRIC_NAMES.storeFailures, {
      description: 'Store calls that failed, by kind; circuit_open: refused by the open breaker.',
      unit: '{failure}',
    }),
  };
  instrumentsByProvider.set(provider, instruments);
  return instruments;
}

/** The kind of a store failure, for `error.type`. */
export function failureKind(error: unknown): StoreFailureKind {
  if (error instanceof CircuitOpenError) return 'circuit_open';
  if (error instanceof DeadlineExceededError) return 'timeout';
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'disconnected';
  return typeof message === 'string' && DISCONNECTED.test(message) ? 'disconnected' : 'error';
}

/**
 * The instruments the `metrics` option asks for, or undefined when it is off; `global` is
 * the provider `globalMeterProvider` found, if asked.
 */
export function createMetrics(
  option: unknown,
  global: RateLimitMeterProvider | undefined,
): RateLimitMetrics | undefined {
  const fail = (problem: string) =>
    new RateLimitConfigError(`Invalid RateLimitModule option metrics: ${problem}`);
  if (option === undefined || option === false) return undefined;
  if (option !== true && !isObject(option)) {
    throw fail(
      `must be true, false or { meterProvider?, nearLimitShare? } (got ${String(option)})`,
    );
  }
  const { meterProvider = global, nearLimitShare = DEFAULT_NEAR_LIMIT_SHARE } =
    option === true ? {} : (option as RateLimitMetricsOptions);
  if (typeof nearLimitShare !== 'number' || !(nearLimitShare >= 0 && nearLimitShare <= 1)) {
    throw fail(`nearLimitShare must be a number from 0 to 1 (got ${String(nearLimitShare)})`);
  }
  if (!isObject(meterProvider) || typeof meterProvider.getMeter !== 'function') {
    throw fail(
      meterProvider === undefined
        ? 'needs a meterProvider, or RateLimitModule to find the global one'
        : 'meterProvider must be an OpenTelemetry MeterProvider (with getMeter)',
    );
  }
  return new RateLimitMetrics(meterProvider as RateLimitMeterProvider, nearLimitShare);
}

/**
 * The global MeterProvider, when the `metrics` option asks for it: `@opentelemetry/api`
 * is loaded only then.
 */
export async function globalMeterProvider(
  option: boolean | RateLimitMetricsOptions | undefined,
): Promise<RateLimitMeterProvider | undefined> {
  const wanted = option === true || (isObject(option) && option.meterProvider === undefined);
  if (!wanted) return undefined;
  try {
    const api = (await import('@opentelemetry/api')) as {
      metrics: { getMeterProvider(): RateLimitMeterProvider };
    };
    return api.metrics.getMeterProvider();
  } catch (error) {
    throw new RateLimitConfigError(
      'Invalid RateLimitModule option metrics: without a meterProvider it needs the ' +
        `@opentelemetry/api package (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

function byKey<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  const made = {} as Record<K, V>;
  for (const key of keys) made[key] = make(key);
  return made;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;
