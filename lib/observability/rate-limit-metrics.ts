import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import type { RateLimitOutcome } from '../interfaces/rate-limit-event.interface.js';
import type {
  RateLimitMeter,
  RateLimitMeterProvider,
  RateLimitMetricAttributes as Attributes,
} from '../interfaces/rate-limit-metrics.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/** What the metrics read of a route: its id and its policies' names and roles. */
export interface MeteredRoute {
  readonly route: string;
  readonly policies: readonly Pick<ResolvedPolicy, 'name' | 'shadow'>[];
}

/** The metrics' names, as docs/observability.md lists them. */
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
  decided(plan: MeteredRoute, outcome: RateLimitOutcome, decision?: RateLimitDecision): void {
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
  storeFailed(kind: StoreFailureKind, askedAt: number): void {
    const attributes = this.failures[kind];
    this.instruments.storeFailures.add(1, attributes);
    // A refused call never reached the store: it has no duration.
    if (kind !== 'circuit_open') {
      this.instruments.storeDuration.record((performance.now() - askedAt) / 1_000, attributes);
    }
  }

  private tally({ route, policies }: MeteredRoute): PolicyTally[] {
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

function byKey<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  const made = {} as Record<K, V>;
  for (const key of keys) made[key] = make(key);
  return made;
}
