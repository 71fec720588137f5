import type { FailureMode } from './rate-limit-policy.interface.js';

/**
 * What `RateLimiter.storeStatus()` tells of the store that decides: read from what the
 * limiter has seen of it (its answers, its failures, its circuit breakers and the client's
 * connection), without asking it anything.
 */
export interface RateLimitStoreStatus {
  /** True while the store makes the decisions; false while the failure mode answers instead. */
  readonly deciding: boolean;
  /**
   * `'redis'`, `'embedded'` (the in-process store: limits per process) or `'custom'` (the
   * `store` option).
   */
  readonly store: 'redis' | 'embedded' | 'custom';
  /**
   * Why the store is not deciding, and what requests get meanwhile, in words without
   * addresses, keys or store errors; undefined while it decides.
   */
  readonly reason: string | undefined;
  /** The module's failure mode (a policy may set its own for its routes). */
  readonly failureMode: FailureMode;
  /** Since when (epoch ms) the store has been failing: its last call failed, none answered since. */
  readonly failingSince: number | undefined;
  /** The store's circuit breaker is open: decisions take the failure mode without asking it. */
  readonly breakerOpen: boolean;
  /** On a Redis Cluster, the masters (host:port) whose own circuit breaker is open. */
  readonly nodesWithBreakerOpen: readonly string[];
}
