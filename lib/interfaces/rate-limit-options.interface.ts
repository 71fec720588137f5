import type { ExecutionContext } from '@nestjs/common';
import type { RedisClientLike, RedisConnectionOptions } from './redis-client.interface.js';
import type {
  RateLimitOpenApiOptions,
  RateLimitResponseOption,
} from './rate-limit-response.interface.js';
import type { RateLimitMetricsOptions } from './rate-limit-metrics.interface.js';
import type { RateLimitDecisionHook } from './rate-limit-event.interface.js';
import type {
  Algorithm,
  FailureMode,
  KeyResolver,
  RateLimitPolicy,
} from './rate-limit-policy.interface.js';
import type { RateLimitStore } from './rate-limit-store.interface.js';

/**
 * The kinds of handler the guard limits: HTTP routes, GraphQL resolvers (`@nestjs/graphql`),
 * WebSocket gateway handlers (`@nestjs/websockets`) and microservice message handlers
 * (`@nestjs/microservices`). Other strings name transports a guard subclass adds.
 */
export type RateLimitContextType = 'http' | 'graphql' | 'ws' | 'rpc' | (string & {});

/** Which rate-limit response headers the guard sets. */
export type HeaderStyle = 'ietf' | 'legacy' | 'both' | 'none';
/** `'redis'`: Redis `TIME`; `'local'`: `Date.now()`; a function: its epoch milliseconds. */
export type ClockOption = 'redis' | 'local' | (() => number);

/** The `defaults` option: what policies that leave these fields out get. */
export interface PolicyDefaults {
  readonly algorithm?: Algorithm;
  readonly scope?: 'route' | 'global';
}

/** Options of `RateLimitModule.forRoot` / `forRootAsync`. */
export interface RateLimitModuleOptions {
  /**
   * A URL or ioredis options (the module creates, connects and closes that client), or a
   * client you own, never closed by the module: ioredis or iovalkey `Redis` / `Cluster`,
   * node-redis `createClient()` / `createCluster()`, Valkey GLIDE `GlideClient` /
   * `GlideClusterClient` (docs/redis-clients.md). Omitted (and no
   * `store`): the embedded in-process store, with a start-up warning that limits are per
   * process. An empty string (an unset `REDIS_URL=`) fails the start: it never means
   * localhost. A URL or options need the `ioredis` package.
   * @default undefined
   */
  redis?: string | RedisConnectionOptions | RedisClientLike;
  /**
   * A store of your own (Valkey functions, a Redis module, an instrumented wrapper), used
   * instead of `redis` and the embedded store, and never closed by the module.
   * @default undefined
   */
  store?: RateLimitStore;
  /**
   * First part of every Redis key: 1-32 bytes, no braces or spaces.
   * @default 'rl'
   */
  prefix?: string;
  /**
   * What a policy that names no `algorithm` or `scope` gets, in decorators and module
   * policies alike (so a migration from `@nestjs/throttler` need not repeat them). Unset:
   * the sliding window counter, scope `'route'` in decorators and `'global'` in `policies`.
   * @default {}
   */
  defaults?: PolicyDefaults;
  /**
   * Applied to every handler without its own `@RateLimit`; their scope defaults to
   * `'global'`, one budget per client shared by all those handlers.
   * @default []
   */
  policies?: RateLimitPolicy[];
  /**
   * When the store is unreachable, erroring or silent: `'open'` admits (and warns at most
   * every 5 s), `'closed'` answers 503 with `Retry-After`, `'local'` (an extension) decides in
   * this process at `1 / instances` of each limit until the store answers again. A policy's
   * own `failureMode` overrides it on the routes that use the policy.
   * @default 'open'
   */
  failureMode?: FailureMode;
  /**
   * How long the store may stay silent (nothing answered on it) before a decision fails, in
   * ms. While answers keep arriving, a decision that is late only because this process is
   * busy waits on, up to `maxWait`.
   * @default 100
   */
  timeout?: number;
  /**
   * The hard cap in ms on waiting for one decision while the store is answering but this
   * process is late (its event loop busy); past it the failure mode applies. An extension.
   * @default 2000 (or `timeout`, if larger)
   */
  maxWait?: number;
  /**
   * The circuit breaker on the store: after `failures` failed decisions in a row it opens and
   * decisions take the failure mode at once, without waiting; every `halfOpenAfter` ms one
   * decision probes the store (waiting its deadline if the store is still silent), and its
   * success closes the breaker. `false` turns it off. An extension.
   * @default { failures: 3, halfOpenAfter: 500 }
   */
  breaker?: false | { failures?: number; halfOpenAfter?: number };
  /**
   * With `failureMode: 'local'` (the module's or a policy's): how many instances share the
   * limits. Each decides locally at `floor(limit / instances)` (at least 1) of every policy,
   * and of its burst, while the store is unavailable. Required by the module's `'local'`
   * and by any policy's. An extension.
   * @default undefined
   */
  instances?: number;
  /**
   * Response headers: IETF `RateLimit` / `RateLimit-Policy`, legacy `X-RateLimit-*`, both, or
   * none.
   * @default 'ietf'
   */
  headers?: HeaderStyle;
  /**
   * Who is being limited: requests that map to the same string share a budget.
   * @default clientIp (the client IP under the HTTP adapter's trust-proxy setting, or the
   * socket's peer address)
   */
  keyBy?: KeyResolver;
  /**
   * How many leading bits of an IPv6 client address make one client, for the default
   * `keyBy`: a client usually holds a whole /64 (or /56, /48) and could otherwise rotate
   * through its addresses. An integer from 32 to 128; IPv4 and IPv4-mapped IPv6 addresses
   * are keyed by the whole IPv4 address.
   * @default 64
   */
  ipv6Subnet?: number;
  /**
   * Returns true for requests that are not limited.
   * @default undefined (every request is limited)
   */
  skip?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /**
   * Shadow mode: decide, count, log would-be denials and set headers, but never block.
   * @default false
   */
  dryRun?: boolean;
  /**
   * Where time comes from: Redis `TIME` (no app-server clock skew), `Date.now()`, or a
   * function returning epoch ms (virtual clocks).
   * @default 'redis'
   */
  clock?: ClockOption;
  /**
   * Answers requests this pod already knows to be denied without asking the store: once a
   * decision denies a client until T (when it was sent plus retryAfterMs), requests on the
   * same policies and keys at the same or a higher cost get the same 429 until T. Exact,
   * since other pods can only consume; `false` turns it off; `maxEntries` bounds its
   * memory (oldest out). No effect with `dryRun`. An extension of the contract.
   * @default { maxEntries: 10000 }
   */
  denyCache?: boolean | { maxEntries?: number };
  /**
   * Register `RateLimitGuard` as a global guard. With `false`, apply it with
   * `@UseGuards(RateLimitGuard)` or register a subclass as `APP_GUARD`.
   * @default true
   */
  guard?: boolean;
  /**
   * The kinds of handler the guard limits, by `ExecutionContext.getType()`: `'http'`
   * routes, `'graphql'` resolvers, `'ws'` gateway handlers, `'rpc'` microservice handlers.
   * Handlers of other types pass unlimited.
   * @default ['http', 'graphql', 'ws', 'rpc']
   */
  contextTypes?: RateLimitContextType[];
  /**
   * Called synchronously after each decision of the guard with its outcome, the route, the
   * client keys and the policy results, for audit, metrics or custom handling. What it
   * throws (or a promise it returns rejects with) is logged, at most every 5 s, and never
   * changes the answer. Not called for skipped requests, nor by `RateLimiter` calls. An
   * extension.
   * @default undefined
   */
  onDecision?: RateLimitDecisionHook;
  /**
   * Shapes the guard's 429: a message for the default body, or a function of the context
   * and the denial returning the whole body. Status, Retry-After and the RateLimit headers
   * stay. A function that throws is logged and the default body sent. An extension.
   * @default undefined (the default body)
   */
  limitedResponse?: RateLimitResponseOption;
  /**
   * The same for the 503 of `failureMode: 'closed'`. An extension.
   * @default undefined (the default body)
   */
  unavailableResponse?: RateLimitResponseOption;
  /**
   * With `@nestjs/swagger` installed (an optional peer, loaded only then): each limited HTTP
   * route's OpenAPI operation documents the 429 (the headers of the `headers` option,
   * Retry-After, the body) and, where its failure mode is `'closed'`, the 503. The schemas
   * of bodies that `limitedResponse` / `unavailableResponse` functions make are named here;
   * a status the route or its controller documents itself is left as it is. `false`
   * documents nothing (docs/responses.md). An extension.
   * @default true
   */
  openApi?: boolean | RateLimitOpenApiOptions;
  /**
   * OpenTelemetry metrics (docs/observability.md lists names, units and
   * attributes): decisions of the guard by route, policy and outcome, near-limit admissions,
   * store latency and store failures by kind. `true` uses the global MeterProvider of
   * `@opentelemetry/api` (an optional peer, loaded only then); or pass a `meterProvider`,
   * and the share of capacity left under which an admission counts as near the limit.
   * Off, nothing of OpenTelemetry is loaded. An extension.
   * @default false
   */
  metrics?: boolean | RateLimitMetricsOptions;
}
