import type { ExecutionContext } from '@nestjs/common';

/** The five algorithms; each is one script in `lua/`, mirrored by the embedded store. */
export const ALGORITHMS = [
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** Says who is being limited: requests that map to the same string share a budget. */
export type KeyResolver = (context: ExecutionContext) => string | Promise<string>;

/** One budget: how much a client may do per window, and how that is counted. */
export interface RateLimitPolicy {
  /** Default `'default'`; unique per route; shows in keys and headers. */
  name?: string;
  /** Default `'sliding-window-counter'`. */
  algorithm?: Algorithm;
  /** Positive integer: requests per window, or bucket capacity. */
  limit: number;
  /** Milliseconds, or a duration such as `'250ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`. */
  window: number | string;
  /** Token-bucket capacity / leaky-bucket queue size; default `limit`. */
  burst?: number;
  /** What one request costs; default 1. */
  cost?: number | ((context: ExecutionContext) => number | Promise<number>);
  /** Overrides the module's `keyBy` for this policy. */
  keyBy?: KeyResolver;
  /**
   * `'route'` (default in decorators): a budget per route and client.
   * `'global'` (default in module policies): one budget per policy name and client, shared
   * by every route that uses the policy.
   */
  scope?: 'route' | 'global';
}
