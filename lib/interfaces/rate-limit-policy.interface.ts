import type { ExecutionContext } from '@nestjs/common';

/** The five algorithms; each is one script in `lua/`, mirrored by the embedded store. */
export const ALGORITHMS = [
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
] as const;
/** One of ALGORITHMS: how a policy counts. */
export type Algorithm = (typeof ALGORITHMS)[number];

/**
 * What happens to a request when the store is unreachable, erroring or late: `'open'`
 * admits it, `'closed'` answers 503 with `Retry-After`, `'local'` decides it in this process
 * at `1 / instances` of each limit.
 */
export type FailureMode = 'open' | 'closed' | 'local';

/**
 * Which requests a policy counts (`RateLimitPolicy.count`): all of them, only those whose
 * outcome is a failure, or only those that succeed.
 */
export type OutcomeCount = 'all' | 'failed' | 'succeeded';

/**
 * Whether a request's outcome is a failure (`RateLimitPolicy.isFailure`): given the final
 * HTTP status, or on any transport what the handler threw (an error; `undefined` when a
 * GraphQL, WebSocket or microservice handler returned).
 */
export type FailureTest = (context: ExecutionContext, statusOrError: unknown) => boolean;

/**
 * Says who is being limited: requests that map to the same string share a budget. No key
 * (`undefined`, `null` or `''`, such as `req.user?.id` before any user is known) limits the
 * request by its client address instead, with a warning.
 */
export type KeyResolver = (
  context: ExecutionContext,
) => string | null | undefined | Promise<string | null | undefined>;

/**
 * A policy's `limit` or `burst` worked out per request, e.g. from the user's plan. It must
 * give a positive integer; anything else (or a throw, or a rejection) is the app's error:
 * the guard answers 500 naming the route and policy, logs it (at most every 5 s) and
 * charges nothing. Only `RateLimitGuard` calls it; `RateLimiter` takes numbers.
 */
export type LimitResolver = (context: ExecutionContext) => number | Promise<number>;

/** One budget: how much a client may do per window, and how that is counted. */
export interface RateLimitPolicy {
  /**
   * Unique per handler; shows in keys and headers (1-64 of `A-Za-z0-9_.-`).
   * @default 'default'
   */
  name?: string;
  /** @default 'sliding-window-counter' */
  algorithm?: Algorithm;
  /**
   * Positive integer: requests per window, or the bucket's refill per window. Or a function
   * of the request (an extension of the contract), resolved on every request to a route;
   * see `LimitResolver`.
   */
  limit: number | LimitResolver;
  /** Milliseconds, or a duration such as `'250ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`. */
  window: number | string;
  /**
   * Token-bucket capacity / leaky-bucket queue size (ignored by the window algorithms).
   * A function of the request too, like `limit` (see `LimitResolver`).
   * @default limit (as resolved for the request)
   */
  burst?: number | LimitResolver;
  /**
   * What one request costs: a positive integer, or a function of the request.
   * @default 1
   */
  cost?: number | ((context: ExecutionContext) => number | Promise<number>);
  /**
   * Who is limited under this policy, instead of the module's `keyBy`.
   * @default the module's keyBy
   */
  keyBy?: KeyResolver;
  /**
   * `'route'`: a budget per handler and client. `'global'`: one budget per policy name and
   * client, shared by every handler that uses the policy.
   * @default 'route' in decorators, 'global' in module policies
   */
  scope?: 'route' | 'global';
  /**
   * Trial the policy beside the enforced ones: it is decided, charged as if it were the
   * route's only policy, shown in headers and `onDecision`, and a denial of its own is
   * logged (at most every 5 s) but never blocks, nor stops the other policies charging.
   * An extension.
   * @default false
   */
  shadow?: boolean;
  /**
   * Keeps a client denied for this long after the policy denies it (in milliseconds, or a
   * duration like `window`), whatever its budget holds meanwhile; the denials during the
   * block neither charge nor extend it, and `retryAfterMs`, `Retry-After` and the RateLimit
   * header's `t` count it down. Decided in the same atomic call, on the store's clock. An
   * extension (as rate-limiter-flexible's and @nestjs/throttler's blockDuration).
   * @default none
   */
  blockDuration?: number | string;
  /**
   * This policy's failure mode, overriding the module's for the routes that use it; on a
   * route with several policies the strictest applies (`closed` over `local` over `open`),
   * e.g. a login route closed while reads stay open. `'local'` needs the module option
   * `instances`.
   * @default the module's failureMode
   */
  failureMode?: FailureMode;
  /**
   * Leased quotas (fixed-window, sliding-window-counter and token-bucket only): the most
   * units a pod takes from one client key's shared budget in one store call, charged in the
   * store at once and then admitted locally until spent or the lease ends (the window's end;
   * a token bucket: the time the lease takes to refill). A positive integer, at most `limit`;
   * with a function `limit`, capped by the resolved limit. Requests costing more are decided
   * by the store directly. See docs/leases.md.
   * @default none: every request is decided by the store
   */
  lease?: number;
  /**
   * Which requests the policy counts: `'all'`, only those that fail (`'failed'`: a
   * successful one is given back after its response, e.g. failed logins), or only those that
   * succeed (`'succeeded'`). The charge is still taken before the handler, atomically, so
   * parallel requests cannot race past the limit; the give-back happens once, after the
   * response. See docs/policies.md ("Protecting a login").
   * @default 'all'
   */
  count?: OutcomeCount;
  /**
   * With `count` 'failed' or 'succeeded': says whether a request failed, instead of the
   * default (an HTTP status of 400 or more, or a thrown exception; on GraphQL, WebSocket
   * and microservice handlers, a thrown exception). Called once per admitted request, with
   * the final HTTP status, or with what the handler threw (`undefined` if it returned, on
   * the transports without a status). A throw counts as a failure.
   * @default status >= 400 or a thrown exception
   */
  isFailure?: FailureTest;
}
