import type { Logger } from '@nestjs/common';
import type { BreakerOptions } from '../config/resolved-options.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { SilenceDetector } from './deadline.js';

/**
 * What the limiter keeps of one node of the store (or of the whole store, where requests go
 * to no one node): how long it has gone silent, and its circuit breaker, if any.
 */
export interface StoreNode {
  readonly silence: SilenceDetector;
  readonly breaker: CircuitBreaker | undefined;
}

/**
 * A StoreNode per node of a store that has several (a Redis Cluster's masters, by the
 * address the client routes a slot to; see RateLimitStore.nodeOf). Only a node's own answers
 * are signs of its life: a stalled master's decisions fail at the deadline while the others
 * answer, its breaker opens as a single store's would, and decisions on the other masters'
 * keys go on as before. While a node's breaker is open, `probe` asks that node in the
 * background (RateLimitStore.nodeTime); without it, requests for its keys probe it, one every
 * `halfOpenAfter`. After a failover the client routes the slots to the promoted replica,
 * which is a fresh node. One per address the client ever routed to: a handful.
 */
export class StoreNodes {
  private readonly nodes = new Map<string, StoreNode>();

  constructor(
    private readonly breakerOptions: BreakerOptions | undefined,
    /** The failure modes in force, in words, for the breaker's warning. */
    private readonly failureModes: () => string,
    private readonly logger: Logger,
    private readonly probe: ((name: string, node: StoreNode) => void) | undefined,
  ) {}

  for(name: string): StoreNode {
    let node = this.nodes.get(name);
    if (!node) {
      const { breakerOptions } = this;
      const breaker =
        breakerOptions &&
        new CircuitBreaker(breakerOptions, (open) => {
          this.report(name, open);
          if (open) this.probe?.(name, node!);
        });
      node = { silence: new SilenceDetector(), breaker };
      this.nodes.set(name, node);
    }
    return node;
  }

  /** The nodes whose circuit breaker is open now. */
  withBreakerOpen(): string[] {
    return [...this.nodes].filter(([, node]) => node.breaker?.isOpen).map(([name]) => name);
  }

  private report(name: string, open: boolean): void {
    if (!open) {
      this.logger.log(`Rate limit store node ${name} answering again: its circuit breaker closed`);
      return;
    }
    const { failures, halfOpenAfter } = this.breakerOptions!;
    this.logger.warn(
      `Rate limit store node ${name} silent ${failures} times in a row: its circuit breaker open, ` +
        `decisions on its keys take ${this.failureModes()} without waiting until it answers; ` +
        (this.probe ? 'probing it in the background' : `one probe every ${halfOpenAfter} ms`),
    );
  }
}
