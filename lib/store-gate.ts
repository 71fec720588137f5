import type { Logger } from '@nestjs/common';
import { type BreakerPass, CircuitBreaker } from './circuit-breaker.js';
import { DeadlineExceededError, SilenceMeter } from './deadline.js';
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

  /** Decides `request`, asked at monotonic instant `askedAt`. */
  decide(request: DecideRequest, askedAt = performance.now()): Promise<StoreDecision> {
    return this.attempt(request, askedAt, this.options.maxWait);
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.local?.reset(keys);
    const askedAt = performance.now();
    const pass = this.breaker?.pass() ?? 'closed';
    if (pass === 'refused') throw this.refused(askedAt);
    const { timeout, maxWait } = this.options;
    await this.silence.withDeadline(
      callStore(this.store, this.store.reset, keys),
      { patience: timeout, timeout, maxWait },
      askedAt,
      () => this.succeeded(askedAt),
      (error: unknown) => {
        this.failed(error, pass, askedAt);
        throw error;
      },
    );
  }

  close(): Promise<void> {
    return this.local?.close() ?? Promise.resolve();
  }

  /**
   * One try at a decision. It is wanted until `patience` ms from now: the deadline plus a
   * margin over how long answers have lately taken (long only on a busy process or machine),
   * within maxWait. The deadline never gives up before then, and the store, told so as
   * `wantedUntil`, charges nothing after then. A failure goes to the local fallback, if any.
   */
  private attempt(
    request: DecideRequest,
    askedAt: number,
    maxWait: number,
  ): Promise<StoreDecision> {
    const pass = this.breaker?.pass() ?? 'closed';
    if (pass === 'refused') return this.fail(request, this.refused(askedAt));
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
    return this.silence.withDeadline(
      callStore(this.store, this.store.decide, asked),
      { patience, timeout, maxWait },
      askedAt,
      (decision) => {
        this.succeeded(askedAt);
        return decision.stale ? this.retryStale(request, askedAt, patience, maxWait) : decision;
      },
      (error: unknown) => {
        this.failed(error, pass, askedAt);
        return this.fail(request, error);
      },
    );
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
    return this.fail(
      request,
      new DeadlineExceededError(`no answer in time within maxWait ${maxWait} ms`),
    );
  }

  private refused(askedAt: number): CircuitOpenError {
    const error = new CircuitOpenError(`circuit breaker open (last failure: ${this.lastFailure})`);
    this.options.metrics?.storeFailed(error, askedAt);
    return error;
  }

  private succeeded(askedAt: number): void {
    this.options.metrics?.storeAnswered(askedAt);
    this.breaker?.succeeded();
  }

  /** A failed call counts against the breaker. */
  private failed(error: unknown, pass: BreakerPass, askedAt: number): void {
    this.options.metrics?.storeFailed(error, askedAt);
    this.lastFailure = error instanceof Error ? error.message : String(error);
    this.breaker?.failed(pass);
  }

  /** A decision the store could not make: the local fallback makes it, if there is one. */
  private fail(request: DecideRequest, error: unknown): Promise<StoreDecision> {
    return this.local ? this.decideLocally(request, error) : Promise.reject(error);
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

/**
 * `store.method(argument)`, a synchronous throw turned into a rejection (the limiter treats
 * both alike). Method and receiver apart, so that the hot path allocates no closure.
 */
function callStore<A, T>(
  store: RateLimitStore,
  method: (this: RateLimitStore, argument: A) => Promise<T>,
  argument: A,
): Promise<T> {
  try {
    return method.call(store, argument);
  } catch (error) {
    return Promise.reject(error);
  }
}
