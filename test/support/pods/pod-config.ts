import type { Algorithm, OutcomeCount } from '../../../lib/index.js';

/**
 * Which limiter guards a pod's routes:
 * - `library`: RateLimitModule on Redis (the thing under test);
 * - `in-memory`: RateLimitModule without Redis, i.e. the embedded store, one budget per pod;
 * - `naive-redis`: a GET-then-INCR fixed window on Redis (`naive-redis.guard.ts`).
 */
export type PodVariant = 'library' | 'in-memory' | 'naive-redis';

/** One route's budget; the window in ms so that every variant reads it the same way. */
export interface PodRoutePolicy {
  readonly algorithm: Algorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst?: number;
  /** The policy's `lease` (docs/leases.md). */
  readonly lease?: number;
  /**
   * The policy's `count`. Such a route answers 200 to a request whose OUTCOME_HEADER says
   * 'success' and 401 to any other, as a login form does.
   */
  readonly count?: OutcomeCount;
}

/** Everything a pod needs, passed as JSON in the POD_CONFIG environment variable. */
export interface PodConfig {
  readonly variant: PodVariant;
  /** Required by `library` and `naive-redis`, unless `library` is given `redisCluster`. */
  readonly redisUrl?: string;
  /**
   * For `library` instead of `redisUrl`: the pod creates an ioredis Cluster on these seed
   * nodes with these (JSON) options and passes it as `redis`, as an app owning its client does.
   */
  readonly redisCluster?: {
    readonly nodes: readonly { readonly host: string; readonly port: number }[];
    readonly options?: Readonly<Record<string, number | string | boolean>>;
  };
  /**
   * For `library`: the pod makes its client itself with this library (a `Redis` on
   * `redisUrl`, or the `Cluster`), as an app owning its client does. Without it, a `redisUrl`
   * goes to the module, which connects with ioredis, and a `redisCluster` is ioredis'.
   */
  readonly clientLibrary?: 'ioredis' | 'iovalkey';
  readonly clock?: 'redis' | 'local';
  /** The module's `failureMode` and `timeout`; the pods default to 'closed' and 10 s. */
  readonly failureMode?: 'open' | 'closed' | 'local';
  readonly decisionTimeoutMs?: number;
  /** The module's `instances`, for failureMode 'local'. */
  readonly instances?: number;
  /** Blocks the pod's event loop for `forMs` every `everyMs`, as a CPU-bound handler would. */
  readonly blockEventLoop?: { readonly everyMs: number; readonly forMs: number };
  /** Keep every request the pod answers, served at REQUEST_LOG_PATH (request-log.ts). */
  readonly requestLog?: boolean;
  /** Key prefix, so that runs sharing one Redis never share a budget. */
  readonly prefix: string;
  /** Route name (served at GET /limited/<name>) to its policy. */
  readonly routes: Readonly<Record<string, PodRoutePolicy>>;
}

export const POD_CONFIG_ENV = 'POD_CONFIG';
/** Preloaded `skew-clock.js` shifts `Date.now()` by this many ms. */
export const CLOCK_SKEW_ENV = 'POD_CLOCK_SKEW_MS';
/** Every pod keys clients by this header, so one client is the same client on every pod. */
export const CLIENT_KEY_HEADER = 'x-client';
/** On routes with `count`: 'success' makes the handler succeed; anything else, fail (401). */
export const OUTCOME_HEADER = 'x-outcome';
/** Epoch ms (pod clock) just before and just after the pod asked its store for a decision. */
export const DECISION_STARTED_HEADER = 'x-decision-started-at';
export const DECISION_ENDED_HEADER = 'x-decision-ended-at';
/** The one line a pod prints on stdout, once it accepts requests. */
export const READY_LINE = /^pod listening on (\d+)$/m;

export const routePath = (route: string): string => `/limited/${route}`;
/** A pod's largest event-loop delay (ms) since the previous request to this path. */
export const LOOP_DELAY_PATH = '/loop-delay';
/** With `requestLog`: the requests the pod answered since the previous request to this path. */
export const REQUEST_LOG_PATH = '/request-log';

/**
 * A window so long that nothing refills or slides out during a run, and an epoch-aligned
 * fixed window boundary falls inside a run of seconds with odds of about one in a million.
 */
export const WEEK_MS = 7 * 24 * 3_600_000;

/** The algorithms that, over a window too long to refill or slide, admit exactly `limit`. */
export const EXACT_ALGORITHMS: readonly Algorithm[] = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
];

/** One route per algorithm, named after it, every one with the same budget. */
export function routePerAlgorithm(
  algorithms: readonly Algorithm[],
  budget: Omit<PodRoutePolicy, 'algorithm'>,
): Record<string, PodRoutePolicy> {
  return Object.fromEntries(algorithms.map((algorithm) => [algorithm, { ...budget, algorithm }]));
}
