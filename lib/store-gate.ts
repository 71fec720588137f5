import type { Logger } from '@nestjs/common';
import { type BreakerPass, CircuitBreaker } from './circuit-breaker.js';
import {
  DeadlineExceededError,
  type DeadlineLimits,
  SilenceMeter,
  withDeadline,
} from './deadline.js';
import { LocalFallback } from './local-fallback.js';
import { StoreClock } from './store-clock.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';
import type {
  DecideRequest,
  RateLimitStore,
  StoreDecision,
} from './stores/rate-limit-store.interface.js';
import { ThrottledLog } from './throttled-log.js';

/**
 * How many times the slowest recent answer a decision is given before its deadline starts:
 * on a loaded machine latency swings widely, and a script that starts after its wantedUntil
 * must be asked again, which a loaded machine can least afford. Not capped, although a fault
 * then costs a decision this margin past `timeout`: capped at 40 ms, overloaded pods failed
 * open (README, "Chaos, and long runs").
 */
const LATENCY_MARGIN = 4;

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
  /** Set when the store can tell its time: then decisions carry `wantedUntil`. */
  private readonly clock: StoreClock | undefined;
  private readonly localLog: ThrottledLog;

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: ResolvedRateLimitOptions,
    private readonly logger: Logger,
  ) {
    const { breaker, instances } = options;
    this.breaker = breaker && new CircuitBreaker(breaker, (open) => this.reportBreaker(open));
    this.local = instances === undefined ? undefined : new LocalFallback(instances);
    this.clock = store.time && new StoreClock(() => store.time!());
    this.localLog = new ThrottledLog(logger);
  }

  decide(request: DecideRequest): Promise<StoreDecision> {
    return this.attempt(request, performance.now(), this.options.maxWait);
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.local?.reset(keys);
    const { timeout, maxWait } = this.options;
    await this.ask(() => this.store.reset(keys), {
      wait: { patience: timeout, timeout, maxWait },
      askedAt: performance.now(),
    });
  }

  close(): Promise<void> {
    return this.local?.close() ?? Promise.resolve();
  }

  /**
   * One try at a decision. It is wanted until `patience` ms from now: the deadline plus a
   * margin over how long answers have lately taken (long only on a busy process or machine),
   * within maxWait. The deadline never gives up before then, and the store, told so as
   * `wantedUntil`, charges nothing after then.
   */
  private attempt(
    request: DecideRequest,
    askedAt: number,
    maxWait: number,
  ): Promise<StoreDecision> {
    const { timeout } = this.options;
    const patience = Math.min(maxWait, timeout + LATENCY_MARGIN * this.silence.recentLatency());
    const wantedUntil = this.clock?.at(askedAt + patience);
    // Written out: a spread that adds a property costs about a microsecond per decision.
    const asked: DecideRequest =
      wantedUntil === undefined
        ? request
        : {
            mode: request.mode,
            keys: request.keys,
            policies: request.policies,
            costs: request.costs,
            now: request.now,
            ttlFloorMs: request.ttlFloorMs,
            wantedUntil,
          };
    const fallBack = this.local && ((error: unknown) => this.decideLocally(request, error));
    return this.ask(() => this.store.decide(asked), {
      wait: { patience, timeout, maxWait },
      askedAt,
      fallBack,
      onAnswer: (decision) =>
        decision.stale ? this.retryStale(request, askedAt, patience, maxWait) : decision,
    });
  }

  /**
   * A stale answer charged nothing: the script ran after the decision stopped being wanted,
   * yet this process still waits (it was the late one). Ask again within what is left of
   * maxWait. Stale though it came back in time, it proves the store's clock moved.
   */
  private retryStale(
    request: DecideRequest,
    askedAt: number,
    patience: number,
    maxWait: number,
  ): Promise<StoreDecision> {
    const now = performance.now();
    if (now < askedAt + patience) this.clock?.forget();
    const left = maxWait - (now - askedAt);
    if (left > 0) return this.attempt(request, now, left);
    const error = new DeadlineExceededError(`no answer in time within maxWait ${maxWait} ms`);
    return this.local ? this.decideLocally(request, error) : Promise.reject(error);
  }

  /** Asks the store through the breaker and the deadline; a failure goes to `fallBack`, if any. */
  private ask<T>(
    call: () => Promise<T>,
    {
      wait,
      askedAt,
      fallBack,
      onAnswer,
    }: {
      wait: DeadlineLimits;
      askedAt: number;
      fallBack?: (error: unknown) => Promise<T>;
      onAnswer?: (answer: T) => T | Promise<T>;
    },
  ): Promise<T> {
    const fail = (error: unknown): Promise<T> =>
      fallBack ? fallBack(error) : Promise.reject(error);
    const pass: BreakerPass = this.breaker?.pass() ?? 'closed';
    const { metrics } = this.options;
    if (pass === 'refused') {
      const error = new CircuitOpenError(
        `circuit breaker open (last failure: ${this.lastFailure})`,
      );
      metrics?.storeFailed(error, askedAt);
      return fail(error);
    }
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      pending = Promise.reject(error);
    }
    return withDeadline(pending, wait, this.silence, askedAt).then(
      (answer) => {
        metrics?.storeAnswered(askedAt);
        this.breaker?.succeeded();
        return onAnswer ? onAnswer(answer) : answer;
      },
      (error: unknown) => {
        metrics?.storeFailed(error, askedAt);
        this.lastFailure = error instanceof Error ? error.message : String(error);
        this.breaker?.failed(pass);
        return fail(error);
      },
    );
  }

  private decideLocally(request: DecideRequest, error: unknown): Promise<StoreDecision> {
    const reason = error instanceof Error ? error.message : String(error);
    this.localLog.warn(
      `Rate limit store unavailable: ${reason}; deciding locally at 1/${this.options.instances} of each limit (failureMode 'local')`,
    );
    return this.local!.decide(request).then((decision) => ({ ...decision, local: true }));
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
