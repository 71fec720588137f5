import { RateLimitConfigError } from './rate-limit-config.error.js';
import type {
  Algorithm,
  FailureMode,
  OutcomeCount,
  RateLimitPolicy,
} from '../interfaces/rate-limit-policy.interface.js';
import { parseWindow } from './window.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/** Where policies come from, for error messages and per-route keys. */
export interface PolicySource {
  /** Names the place in messages, e.g. 'UsersController.find' or 'RateLimitModule options'. */
  readonly label: string;
  /** Identifies the route in keys of route-scoped policies; absent for the service. */
  readonly routeId?: string;
  readonly defaultScope: 'route' | 'global';
  /** Whether the module option `instances` is set: a policy's failureMode 'local' needs it. */
  readonly localShare?: boolean;
  /** The module's `defaults.algorithm`; unset: the sliding window counter. */
  readonly defaultAlgorithm?: Algorithm;
  /**
   * Set when the guard applies the policies, which can call a limit or burst function per
   * request; the service has no request to call it with, and refuses one.
   */
  readonly perRequest?: boolean;
}

/**
 * In keys. A '2' marks a state layout changed in place of an older one (a hash then, one
 * string now): during a rolling upgrade old and new pods count apart for a window instead
 * of failing on each other's keys with WRONGTYPE. The fixed window's '3': its second
 * string layout (an integer on Redis TIME, lua/fixed-window.lua), which 'fw2' scripts
 * would misread.
 */
const ALGORITHM_CODES: Record<Algorithm, string> = {
  'token-bucket': 'tb2',
  'leaky-bucket': 'lb',
  'fixed-window': 'fw3',
  'sliding-window-log': 'swl',
  'sliding-window-counter': 'swc2',
};
const FAILURE_MODES: readonly FailureMode[] = ['open', 'closed', 'local'];
const OUTCOME_COUNTS: readonly OutcomeCount[] = ['all', 'failed', 'succeeded'];
const BUCKETS: ReadonlySet<Algorithm> = new Set(['token-bucket', 'leaky-bucket']);
/** What a lease can be taken of: budgets whose charge a pod can spend later (docs/leases.md). */
const LEASABLE: readonly Algorithm[] = ['fixed-window', 'sliding-window-counter', 'token-bucket'];
/** Names appear in keys and inside quoted structured-field strings of the headers. */
const POLICY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Validates and prepares the policies of one place; throws RateLimitConfigError naming place and field. */
export function resolvePolicies(
  policies: readonly RateLimitPolicy[],
  source: PolicySource,
): ResolvedPolicy[] {
  const seen = new Set<string>();
  return policies.map((policy) => {
    const resolved = resolvePolicy(policy, source);
    if (seen.has(resolved.name)) {
      throw configError(source, resolved.name, 'name', 'is used twice; names must be unique');
    }
    seen.add(resolved.name);
    return resolved;
  });
}

function resolvePolicy(policy: RateLimitPolicy, source: PolicySource): ResolvedPolicy {
  if (typeof policy !== 'object' || policy === null) {
    throw new RateLimitConfigError(`Invalid rate limit policy on ${source.label}: not an object`);
  }
  const name = policy.name ?? 'default';
  const fail = (field: string, problem: string): never => {
    throw configError(source, String(name), field, problem);
  };
  if (typeof name !== 'string' || !POLICY_NAME.test(name)) {
    fail('name', `must be 1-64 letters, digits, '_', '.' or '-' (got ${JSON.stringify(name)})`);
  }
  const algorithm = policy.algorithm ?? source.defaultAlgorithm ?? 'sliding-window-counter';
  if (typeof algorithm !== 'string' || !Object.hasOwn(ALGORITHM_CODES, algorithm)) {
    fail(
      'algorithm',
      `must be one of ${Object.keys(ALGORITHM_CODES).join(', ')} (got ${JSON.stringify(algorithm)})`,
    );
  }
  const dynamic = typeof policy.limit === 'function' || typeof policy.burst === 'function';
  // The service refuses functions: offering one there would mislead.
  const orFunction = source.perRequest ? ' or a function' : '';
  if (dynamic && !source.perRequest) {
    const field = typeof policy.limit === 'function' ? 'limit' : 'burst';
    fail(
      field,
      'is a function, which only RateLimitGuard can call (with the request); call it yourself and pass the number it gives',
    );
  }
  if (typeof policy.limit !== 'function' && !isPositiveInteger(policy.limit)) {
    fail('limit', `must be a positive integer${orFunction} (got ${JSON.stringify(policy.limit)})`);
  }
  const windowMs = parseWindow(policy.window);
  if (windowMs === undefined) {
    fail(
      'window',
      typeof policy.window === 'function'
        ? 'must be fixed: a function is allowed only for limit and burst'
        : `must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got ${JSON.stringify(policy.window)})`,
    );
  }
  if (
    policy.burst !== undefined &&
    typeof policy.burst !== 'function' &&
    !isPositiveInteger(policy.burst)
  ) {
    fail('burst', `must be a positive integer${orFunction} (got ${JSON.stringify(policy.burst)})`);
  }
  // Only the buckets have a capacity apart from the rate; the windows count up to `limit`.
  const burst = BUCKETS.has(algorithm) ? policy.burst : undefined;
  const capacity = dynamic
    ? undefined
    : capacityOf(algorithm, policy.limit as number, burst as number);
  const cost = policy.cost ?? 1;
  if (typeof cost !== 'function') {
    if (!isPositiveInteger(cost))
      fail('cost', `must be a positive integer or a function (got ${JSON.stringify(cost)})`);
    // A capacity known only per request is checked per request (a denial, never charged).
    if (capacity !== undefined && cost > capacity)
      fail('cost', `${cost} exceeds what the policy can ever admit (${capacity})`);
  }
  if (policy.keyBy !== undefined && typeof policy.keyBy !== 'function') {
    fail('keyBy', 'must be a function');
  }
  const scope = policy.scope ?? source.defaultScope;
  if (scope !== 'route' && scope !== 'global') {
    fail('scope', `must be 'route' or 'global' (got ${JSON.stringify(scope)})`);
  }
  if (policy.shadow !== undefined && typeof policy.shadow !== 'boolean') {
    fail('shadow', `must be true or false (got ${JSON.stringify(policy.shadow)})`);
  }
  const blockMs = policy.blockDuration === undefined ? 0 : parseWindow(policy.blockDuration);
  if (blockMs === undefined) {
    fail(
      'blockDuration',
      `must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got ${JSON.stringify(policy.blockDuration)})`,
    );
  }
  const { failureMode } = policy;
  if (failureMode !== undefined && !FAILURE_MODES.includes(failureMode)) {
    fail('failureMode', `must be 'open', 'closed' or 'local' (got ${JSON.stringify(failureMode)})`);
  }
  if (failureMode === 'local' && !source.localShare) {
    fail(
      'failureMode',
      "'local' needs the module option instances: how many instances share the limits while the store is unavailable",
    );
  }
  const lease = policy.lease ?? 0;
  if (policy.lease !== undefined) {
    if (!LEASABLE.includes(algorithm)) {
      fail('lease', `applies only to ${LEASABLE.join(', ')} (the algorithm is ${algorithm})`);
    }
    if (!isPositiveInteger(lease)) {
      fail('lease', `must be a positive integer (got ${JSON.stringify(policy.lease)})`);
    }
    if (typeof policy.limit === 'number' && lease > policy.limit) {
      fail('lease', `${lease} exceeds the limit (${policy.limit})`);
    }
    // A block must hold on every pod at once, and a shadow is charged apart: neither can be
    // admitted from units a pod holds.
    if (blockMs! > 0) fail('lease', 'cannot be combined with blockDuration');
    if (policy.shadow === true) fail('lease', 'cannot be combined with shadow');
  }
  const count = policy.count ?? 'all';
  if (!OUTCOME_COUNTS.includes(count)) {
    fail('count', `must be 'all', 'failed' or 'succeeded' (got ${JSON.stringify(count)})`);
  }
  if (policy.isFailure !== undefined) {
    if (typeof policy.isFailure !== 'function') fail('isFailure', 'must be a function');
    if (count === 'all') {
      fail('isFailure', "applies only with count 'failed' or 'succeeded' (count is 'all')");
    }
  }
  const routePart = scope === 'route' && source.routeId ? `:${source.routeId}` : '';
  const template: ResolvedPolicy = {
    name,
    algorithm,
    limit: NaN,
    windowMs: windowMs!,
    burst: NaN,
    maxCost: NaN,
    cost,
    keyBy: policy.keyBy,
    scope,
    shadow: policy.shadow === true,
    blockMs: blockMs!,
    failureMode,
    lease,
    count,
    isFailure: policy.isFailure,
    keySuffix: `:${name}:${ALGORITHM_CODES[algorithm]}${routePart}`,
    scriptArgs: [],
    perRequest: { limit: policy.limit, burst },
  };
  return dynamic ? template : sizePolicy(template, policy.limit as number, burst as number);
}

/**
 * The policy decided with this limit and burst (burst undefined: the limit): a template's
 * per request, every other policy's once at start-up. Built field by field in one order, so
 * that every policy object has the same shape.
 */
export function sizePolicy(
  policy: ResolvedPolicy,
  limit: number,
  burst: number | undefined,
): ResolvedPolicy {
  const capacity = capacityOf(policy.algorithm, limit, burst);
  return {
    name: policy.name,
    algorithm: policy.algorithm,
    limit,
    windowMs: policy.windowMs,
    burst: capacity,
    maxCost: capacity,
    cost: policy.cost,
    keyBy: policy.keyBy,
    scope: policy.scope,
    shadow: policy.shadow,
    blockMs: policy.blockMs,
    failureMode: policy.failureMode,
    lease: Math.min(policy.lease, capacity),
    count: policy.count,
    isFailure: policy.isFailure,
    keySuffix: policy.keySuffix,
    scriptArgs: [String(limit), String(policy.windowMs), String(capacity)],
    perRequest: undefined,
  };
}

/** What `remaining` can reach: the bucket's burst (default: the limit), or the window's limit. */
const capacityOf = (algorithm: Algorithm, limit: number, burst: number | undefined): number =>
  BUCKETS.has(algorithm) ? (burst ?? limit) : limit;

/** Whether a limit or burst a function gave can be decided by. */
export const isPositiveInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

function configError(source: PolicySource, name: string, field: string, problem: string) {
  return new RateLimitConfigError(
    `Invalid rate limit policy "${name}" on ${source.label}: ${field} ${problem}`,
  );
}
