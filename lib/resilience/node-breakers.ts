import type { Logger } from '@nestjs/common';
import type { BreakerOptions } from '../config/resolved-options.js';
import type { FailureMode } from '../interfaces/rate-limit-policy.interface.js';
import { CircuitBreaker } from './circuit-breaker.js';

/**
 * A circuit breaker per node of a store that has several (a Redis Cluster's masters, by the
 * address the client routes a slot to; see RateLimitStore.nodeOf): a stalled master opens
 * its own breaker, and decisions on the other masters' keys go on as before. A node's
 * breaker is probed by requests for its keys, one every `halfOpenAfter`, not in the
 * background: the store's time() asks every master, so it cannot tell one node's recovery.
 * After a failover the client routes the slots to the promoted replica, whose breaker is a
 * fresh one. One breaker per address the client ever routed to: a handful.
 */
export class NodeBreakers {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly options: BreakerOptions,
    private readonly failureMode: FailureMode,
    private readonly logger: Logger,
  ) {}

  for(node: string): CircuitBreaker {
    let breaker = this.breakers.get(node);
    if (!breaker) {
      breaker = new CircuitBreaker(this.options, (open) => this.report(node, open));
      this.breakers.set(node, breaker);
    }
    return breaker;
  }

  private report(node: string, open: boolean): void {
    const { failures, halfOpenAfter } = this.options;
    if (open) {
      this.logger.warn(
        `Rate limit store node ${node} silent ${failures} times in a row: its circuit breaker open, ` +
          `decisions on its keys take failureMode '${this.failureMode}' at once until it answers; ` +
          `one probe every ${halfOpenAfter} ms`,
      );
    } else {
      this.logger.log(`Rate limit store node ${node} answering again: its circuit breaker closed`);
    }
  }
}
