import type { ExecutionContext } from '@nestjs/common';
import { RateLimitConfigError } from './rate-limit-config.error.js';
import type {
  ClockOption,
  HeaderStyle,
  PolicyDefaults,
  RateLimitModuleOptions,
} from '../interfaces/rate-limit-options.interface.js';
import type {
  RateLimitOpenApiOptions,
  RateLimitResponseOption,
} from '../interfaces/rate-limit-response.interface.js';
import { createMetrics } from './metrics-option.js';
import type { RateLimitMetrics } from '../observability/rate-limit-metrics.js';
import type { RateLimitDecisionHook } from '../interfaces/rate-limit-event.interface.js';
import {
  ALGORITHMS,
  type KeyResolver,
  type RateLimitPolicy,
} from '../interfaces/rate-limit-policy.interface.js';
import { resolvePolicies } from './resolved-policy.js';
import { DEFAULT_IPV6_SUBNET, isIpv6Subnet } from './ipv6-subnet.js';
import type { RateLimitContextType } from '../interfaces/rate-limit-options.interface.js';
import type { RateLimitMeterProvider } from '../interfaces/rate-limit-metrics.interface.js';
import type { FailureMode } from '../interfaces/rate-limit-policy.interface.js';

/** Module options with every default filled in and every field checked (`RATE_LIMIT_OPTIONS`). */
export interface ResolvedRateLimitOptions {
  readonly redis: RateLimitModuleOptions['redis'];
  readonly store: RateLimitModuleOptions['store'];
  readonly prefix: string;
  readonly policies: readonly RateLimitPolicy[];
  readonly defaults: PolicyDefaults;
  readonly failureMode: FailureMode;
  readonly timeout: number;
  readonly maxWait: number;
  /** Undefined when turned off. */
  readonly breaker: BreakerOptions | undefined;
  /** Set for failureMode 'local', the module's or a policy's. */
  readonly instances: number | undefined;
  readonly headers: HeaderStyle;
  /** Undefined: the guard keys by client IP (`clientIp`). */
  readonly keyBy: KeyResolver | undefined;
  /** The leading bits of an IPv6 client address that make one client (default `keyBy`). */
  readonly ipv6Subnet: number;
  readonly skip: ((context: ExecutionContext) => boolean | Promise<boolean>) | undefined;
  readonly dryRun: boolean;
  readonly clock: ClockOption;
  /** Most entries of the deny cache; 0 when it is off. */
  readonly denyCacheEntries: number;
  readonly guard: boolean;
  readonly contextTypes: readonly RateLimitContextType[];
  readonly onDecision: RateLimitDecisionHook | undefined;
  readonly limitedResponse: RateLimitResponseOption | undefined;
  readonly unavailableResponse: RateLimitResponseOption | undefined;
  /** What OpenAPI documents learn of the limiter's answers; false: nothing. */
  readonly openApi: false | RateLimitOpenApiOptions;
  /** The OpenTelemetry instruments; undefined when the `metrics` option is off. */
  readonly metrics: RateLimitMetrics | undefined;
}

export interface BreakerOptions {
  readonly failures: number;
  readonly halfOpenAfter: number;
}

/** The transports the guard limits unless `contextTypes` says otherwise. */
const CONTEXT_TYPES: readonly RateLimitContextType[] = ['http', 'graphql', 'ws', 'rpc'];
const FAILURE_MODES: readonly FailureMode[] = ['open', 'closed', 'local'];
const DEFAULT_BREAKER: BreakerOptions = { failures: 3, halfOpenAfter: 500 };
const HEADER_STYLES: readonly HeaderStyle[] = ['ietf', 'legacy', 'both', 'none'];
/** Keys stay under 256 bytes: prefix 32 + tag 66 + name 64 + algorithm 4 + route 70. */
const PREFIX = /^[^{}\s]{1,32}$/;
const DENY_CACHE_ENTRIES = 10_000;

/**
 * @param globalMeterProvider what `globalMeterProvider()` found, for a `metrics` option
 *   without a meterProvider of its own
 */
export function resolveOptions(
  options: RateLimitModuleOptions = {},
  globalMeterProvider?: RateLimitMeterProvider,
): ResolvedRateLimitOptions {
  const fail = (field: string, problem: string) =>
    new RateLimitConfigError(`Invalid RateLimitModule option ${field}: ${problem}`);
  const shown = (value: unknown) =>
    typeof value === 'function' ? 'a function' : JSON.stringify(value);
  const {
    prefix = 'rl',
    policies = [],
    failureMode = 'open',
    timeout = 100,
    maxWait = Math.max(2_000, timeout),
    headers = 'ietf',
    clock = 'redis',
    contextTypes = CONTEXT_TYPES,
    ipv6Subnet = DEFAULT_IPV6_SUBNET,
  } = options;
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || Buffer.byteLength(prefix) > 32) {
    throw fail('prefix', `must be 1-32 bytes without braces or spaces (got ${shown(prefix)})`);
  }
  if (!Array.isArray(policies)) throw fail('policies', 'must be an array of policies');
  checkRedis(options.redis, fail);
  const defaults = resolveDefaults(options.defaults, fail);
  if (!FAILURE_MODES.includes(failureMode)) {
    throw fail('failureMode', `must be 'open', 'closed' or 'local' (got ${shown(failureMode)})`);
  }
  if (!isPositiveMs(timeout)) {
    throw fail('timeout', `must be a positive number of ms (got ${shown(timeout)})`);
  }
  if (!isPositiveMs(maxWait) || maxWait < timeout) {
    throw fail('maxWait', `must be a number of ms no smaller than timeout (got ${shown(maxWait)})`);
  }
  const breaker = resolveBreaker(options.breaker, fail);
  const { instances } = options;
  if (failureMode === 'local' && !(Number.isSafeInteger(instances) && instances! > 0)) {
    throw fail(
      'instances',
      `must be a positive integer with failureMode 'local': each instance decides at limit / instances while the store is unavailable (got ${shown(instances)})`,
    );
  }
  if (instances !== undefined && !(Number.isSafeInteger(instances) && instances > 0)) {
    throw fail(
      'instances',
      `must be a positive integer: each instance decides at limit / instances while the store is unavailable (got ${shown(instances)})`,
    );
  }
  if (!HEADER_STYLES.includes(headers)) {
    throw fail('headers', `must be one of ${HEADER_STYLES.join(', ')} (got ${shown(headers)})`);
  }
  if (clock !== 'redis' && clock !== 'local' && typeof clock !== 'function') {
    throw fail(
      'clock',
      `must be 'redis', 'local' or a function returning epoch ms (got ${shown(clock)})`,
    );
  }
  if (!isIpv6Subnet(ipv6Subnet)) {
    throw fail(
      'ipv6Subnet',
      `must be an integer from 32 to 128, the leading bits of an IPv6 address that make one client (got ${shown(ipv6Subnet)})`,
    );
  }
  const { store } = options;
  if (
    store !== undefined &&
    !['decide', 'reset', 'close'].every(
      (method) => typeof (store as unknown as Record<string, unknown>)[method] === 'function',
    )
  ) {
    throw fail('store', 'must implement RateLimitStore (decide, reset, close)');
  }
  for (const field of ['keyBy', 'skip', 'onDecision'] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw fail(field, 'must be a function');
    }
  }
  if (
    !Array.isArray(contextTypes) ||
    !contextTypes.every((type) => typeof type === 'string' && type !== '')
  ) {
    throw fail(
      'contextTypes',
      `must be an array of context types such as ${CONTEXT_TYPES.map((type) => `'${type}'`).join(', ')} (got ${shown(contextTypes)})`,
    );
  }
  for (const field of ['limitedResponse', 'unavailableResponse'] as const) {
    const option = options[field];
    if (option !== undefined && typeof option !== 'string' && typeof option !== 'function') {
      throw fail(
        field,
        `must be a message or a function (context, denial) => body (got ${shown(option)})`,
      );
    }
  }
  const openApi = resolveOpenApi(options.openApi, fail);
  const denyCacheEntries = denyCacheSize(options.denyCache);
  if (denyCacheEntries === undefined) {
    throw fail(
      'denyCache',
      `must be true, false or { maxEntries: a positive integer } (got ${shown(options.denyCache)})`,
    );
  }
  const metrics = createMetrics(options.metrics, globalMeterProvider);
  // Validated now so a mistake stops the start; routes resolve them again with their own ids.
  resolvePolicies(policies, {
    label: 'RateLimitModule options',
    defaultScope: defaults.scope ?? 'global',
    defaultAlgorithm: defaults.algorithm,
    localShare: instances !== undefined,
    perRequest: true,
  });
  return {
    redis: options.redis,
    store,
    prefix,
    policies,
    defaults,
    failureMode,
    timeout,
    maxWait,
    breaker,
    instances,
    headers,
    keyBy: options.keyBy,
    ipv6Subnet,
    skip: options.skip,
    dryRun: options.dryRun === true,
    clock,
    denyCacheEntries,
    guard: options.guard !== false,
    contextTypes,
    onDecision: options.onDecision,
    limitedResponse: options.limitedResponse,
    unavailableResponse: options.unavailableResponse,
    openApi,
    metrics,
  };
}

type Fail = (field: string, problem: string) => RateLimitConfigError;

/** A URL, options or a client; an empty or blank URL is a missing setting, never localhost. */
function checkRedis(redis: unknown, fail: Fail): void {
  if (redis === undefined || (typeof redis === 'object' && redis !== null)) return;
  if (typeof redis !== 'string') {
    throw fail('redis', `must be a URL, ioredis options or a client (got ${typeof redis})`);
  }
  if (redis.trim() === '') {
    throw fail(
      'redis',
      'is an empty string (is REDIS_URL set but empty?): give a URL such as redis://host:6379, or leave redis out for the embedded store',
    );
  }
}

function resolveDefaults(option: unknown, fail: Fail): PolicyDefaults {
  if (option === undefined) return {};
  if (typeof option !== 'object' || option === null) {
    throw fail('defaults', 'must be { algorithm?, scope? }');
  }
  const { algorithm, scope } = option as PolicyDefaults;
  if (algorithm !== undefined && !ALGORITHMS.includes(algorithm)) {
    throw fail(
      'defaults.algorithm',
      `must be one of ${ALGORITHMS.join(', ')} (got ${JSON.stringify(algorithm)})`,
    );
  }
  if (scope !== undefined && scope !== 'route' && scope !== 'global') {
    throw fail('defaults.scope', `must be 'route' or 'global' (got ${JSON.stringify(scope)})`);
  }
  return { algorithm, scope };
}

const isPositiveMs = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

function resolveBreaker(
  option: RateLimitModuleOptions['breaker'],
  fail: Fail,
): BreakerOptions | undefined {
  if (option === false) return undefined;
  if (option === undefined) return DEFAULT_BREAKER;
  if (typeof option !== 'object' || option === null) {
    throw fail('breaker', 'must be false or { failures?, halfOpenAfter? }');
  }
  const { failures = DEFAULT_BREAKER.failures, halfOpenAfter = DEFAULT_BREAKER.halfOpenAfter } =
    option;
  if (!Number.isSafeInteger(failures) || failures <= 0) {
    throw fail('breaker.failures', `must be a positive integer (got ${JSON.stringify(failures)})`);
  }
  if (!isPositiveMs(halfOpenAfter)) {
    throw fail(
      'breaker.halfOpenAfter',
      `must be a positive number of ms (got ${JSON.stringify(halfOpenAfter)})`,
    );
  }
  return { failures, halfOpenAfter };
}

function resolveOpenApi(option: unknown, fail: Fail): false | RateLimitOpenApiOptions {
  if (option === undefined || option === true) return {};
  if (option === false) return false;
  const problem = 'must be true, false or { limitedSchema?, unavailableSchema? }';
  if (typeof option !== 'object' || option === null) throw fail('openApi', problem);
  const { limitedSchema, unavailableSchema } = option as RateLimitOpenApiOptions;
  for (const [field, schema] of Object.entries({ limitedSchema, unavailableSchema })) {
    if (schema !== undefined && typeof schema !== 'function' && !isPlainObject(schema)) {
      throw fail(
        `openApi.${field}`,
        'must be an OpenAPI Schema Object or a class described with @ApiProperty',
      );
    }
  }
  return { limitedSchema, unavailableSchema };
}

const isPlainObject = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Entries the deny cache may hold (0: off), or undefined for a malformed option. */
function denyCacheSize(option: RateLimitModuleOptions['denyCache']): number | undefined {
  if (option === undefined || option === true) return DENY_CACHE_ENTRIES;
  if (option === false) return 0;
  if (typeof option !== 'object' || option === null) return undefined;
  const { maxEntries = DENY_CACHE_ENTRIES } = option;
  return Number.isSafeInteger(maxEntries) && maxEntries > 0 ? maxEntries : undefined;
}
