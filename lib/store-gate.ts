import type { Logger } from '@nestjs/common';
import { type BreakerPass, CircuitBreaker } from './circuit-breaker.js';
import { SilenceMeter, withDeadline } from './deadline.js';
import { LocalFallback } from './local-fallback.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';
import type {
  DecideRequest,
  RateLimitStore,
  StoreDecision,
} from './stores/rate-limit-store.interface.js';
import { ThrottledLog } from './throttled-log.js';

/** A call refused without asking the store: its breaker is open. */
export class CircuitOpenError extends Error {
  override readonly name = 'CircuitOpenError';
}

/**
 * Everything between the limiter and its store when things go wrong, in one place: the
 * deadline that tells a silent store from a late process, the circuit breaker, and the
 * local fallback of failureMode 'local'. Store-agnostic: it judges the store only by its
 * answers.
 */
export class StoreGate {
  private readonly silence = new SilenceMeter();
  private lastFailure = '';
  private readonly breaker: CircuitBreaker | undefined;
  private readonly local: LocalFallback | undefined;
  private readonly localLog: ThrottledLog;

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: ResolvedRateLimitOptions,
    private readonly logger: Logger,
  ) {
    const { breaker, instances } = options;
    this.breaker = breaker && new CircuitBreaker(breaker, (open) => this.reportBreaker(open));
    this.local = instances === undefined ? undefined : new LocalFallback(instances);
    this.localLog = new ThrottledLog(logger);
  }

  decide(request: DecideRequest): Promise<StoreDecision> {
    return this.ask(
      () => this.store.decide(request),
      this.local && ((error) => this.decideLocally(request, error)),
    );
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.local?.reset(keys);
    await this.ask(() => this.store.reset(keys), undefined);
  }

  close(): Promise<void> {
    return this.local?.close() ?? Promise.resolve();
  }

  /** Asks the store through the breaker and the deadline; a failure goes to `fallBack`, if any. */
  private ask<T>(
    call: () => Promise<T>,
    fallBack: ((error: unknown) => Promise<T>) | undefined,
  ): Promise<T> {
    const fail = (error: unknown): Promise<T> =>
      fallBack ? fallBack(error) : Promise.reject(error);
    const pass: BreakerPass = this.breaker?.pass() ?? 'closed';
    if (pass === 'refused') {
      return fail(new CircuitOpenError(`circuit breaker open (last failure: ${this.lastFailure})`));
    }
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      pending = Promise.reject(error);
    }
    const { timeout, maxWait } = this.options;
    return withDeadline(pending, timeout, maxWait, this.silence).then(
      (answer) => {
        this.breaker?.succeeded();
        return answer;
      },
      (error: unknown) => {
        this.lastFailure = error instanceof Error ? error.message : String(error);
        this.breaker?.failed(pass, error);
        return fail(error);
      },
    );
  }

  private decideLocally(request: DecideRequest, error: unknown): Promise<StoreDecision> {
    const reason = error instanceof Error ? error.message : String(error);
    this.localLog.warn(
      `Rate limit store unavailable: ${reason}; deciding locally at 1/${this.options.instances} of each limit (failureMode 'local')`,
    );
    return this.local!.decide(request);
  }

  private reportBreaker(open: boolean): void {
    const { breaker, failureMode } = this.options;
    if (open) {
      this.logger.warn(
        `Rate limit store failed ${breaker!.failures} times in a row (${this.lastFailure}): circuit breaker open, ` +
          `decisions take failureMode '${failureMode}' at once; one probe every ${breaker!.halfOpenAfter} ms`,
      );
    } else {
      this.logger.log('Rate limit store answering again: circuit breaker closed');
    }
  }
}
