import type { BreakerOptions } from '../config/resolved-options.js';

/** What a call may do: go to the store, go as the one probe of an open breaker, or not go. */
export type BreakerPass = 'closed' | 'probe' | 'refused';

/** A call refused without asking the store: its breaker is open. */
export class CircuitOpenError extends Error {
  override readonly name = 'CircuitOpenError';
}

/**
 * Counts store failures in a row; at `failures` it opens, and calls are refused at once
 * instead of each waiting out a deadline on a dead or hung store. `halfOpenAfter` ms after
 * opening, one call goes through as a probe (half-open): its success closes the breaker,
 * its failure opens it for another interval. A hung store thus costs one deadline per
 * interval, not one per request. Time is monotonic (`performance.now()`).
 */
export class CircuitBreaker {
  private failuresInRow = 0;
  /** Set while open: when the current interval began. */
  private openedAt: number | undefined;
  private probing = false;

  constructor(
    private readonly options: BreakerOptions,
    private readonly onChange: (open: boolean) => void = () => undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get isOpen(): boolean {
    return this.openedAt !== undefined;
  }

  pass(): BreakerPass {
    if (this.openedAt === undefined) return 'closed';
    if (this.probing || this.now() - this.openedAt < this.options.halfOpenAfter) return 'refused';
    this.probing = true;
    return 'probe';
  }

  /** Any answer proves the store alive, even one to a call sent before the breaker opened. */
  succeeded(): void {
    this.failuresInRow = 0;
    if (this.openedAt === undefined) return;
    this.openedAt = undefined;
    this.probing = false;
    this.onChange(false);
  }

  failed(pass: BreakerPass): void {
    if (pass === 'probe') {
      this.probing = false;
      this.openedAt = this.now();
      return;
    }
    // Calls sent before the breaker opened may still fail after it did: nothing new.
    if (this.openedAt !== undefined || ++this.failuresInRow < this.options.failures) return;
    this.openedAt = this.now();
    this.onChange(true);
  }
}
