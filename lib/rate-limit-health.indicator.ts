import { Injectable } from '@nestjs/common';
import { RateLimiter } from './limiter/rate-limiter.service.js';

/** What `RateLimitHealthIndicator.isHealthy` reports under its key. */
export interface RateLimitHealthDetails {
  readonly status: 'up' | 'down';
  /** `'redis'`, `'embedded'` (limits per process) or `'custom'`. */
  readonly store: 'redis' | 'embedded' | 'custom';
  /** The module's failure mode: what requests get while the store does not decide. */
  readonly failureMode: 'open' | 'closed' | 'local';
  /** While down: why, and what requests get meanwhile, in words. */
  readonly reason?: string;
  /** While down after a failed call: since when (ISO 8601). */
  readonly failingSince?: string;
  /** While down: the store's circuit breaker is open. */
  readonly breakerOpen?: boolean;
  /** While down on a Redis Cluster: how many masters have their own breaker open. */
  readonly mastersWithBreakerOpen?: number;
}

/**
 * A health indicator for `@nestjs/terminus` (11 and later): up while the store makes the
 * decisions, down with the reason in words while the failure mode answers instead (a lost
 * connection, a failing store, a circuit breaker open, a Cluster master's). It reads
 * `RateLimiter.storeStatus()` and asks the store nothing. Its result is what terminus's
 * `HealthIndicatorService.check(key).up(details)` / `.down(details)` compose and
 * `HealthCheckService.check` reads, so it needs nothing of terminus to load; addresses and
 * store errors stay in the log (docs/observability.md).
 */
@Injectable()
export class RateLimitHealthIndicator {
  constructor(private readonly limiter: RateLimiter) {}

  // Async, as terminus 11's HealthIndicatorFunction type asks of an indicator.
  async isHealthy<const Key extends string = 'rate-limit'>(
    key: Key = 'rate-limit' as Key,
  ): Promise<Record<Key, RateLimitHealthDetails>> {
    const status = this.limiter.storeStatus();
    const { store, failureMode } = status;
    const details: RateLimitHealthDetails = status.deciding
      ? { status: 'up', store, failureMode }
      : {
          status: 'down',
          store,
          failureMode,
          reason: status.reason,
          ...(status.failingSince !== undefined && {
            failingSince: new Date(status.failingSince).toISOString(),
          }),
          breakerOpen: status.breakerOpen,
          ...(status.nodesWithBreakerOpen.length > 0 && {
            mastersWithBreakerOpen: status.nodesWithBreakerOpen.length,
          }),
        };
    return { [key]: details } as Record<Key, RateLimitHealthDetails>;
  }
}
