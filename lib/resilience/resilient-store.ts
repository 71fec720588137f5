import type { Logger } from '@nestjs/common';
import { type BreakerPass, CircuitBreaker, CircuitOpenError } from './circuit-breaker.js';
import { type StoreNode, StoreNodes } from './store-nodes.js';
import { DeadlineExceededError, SilenceDetector, WaitingCall } from './deadline.js';
import { LocalFallback } from './local-fallback.js';
import { RateLimitUnavailableException, retryAfterSeconds } from '../rate-limit.exceptions.js';
import { StoreClock } from './store-clock.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import type {
  DecideRequest,
  RateLimitStore,
  RefundRequest,
  StoreDecision,
} from '../interfaces/rate-limit-store.interface.js';
import { OutageLog } from './outage-log.js';
import { describeFailureModes, strictestFailureMode } from '../config/failure-mode.js';
import type { FailureMode } from '../interfaces/rate-limit-policy.interface.js';
import { failureKind } from './store-failure-kind.js';
import { StoreHealth, type StoreHealthReading } from './store-health.js';

/** What the resilient store reads of the module options. */
export type ResilientStoreOptions = Pick<
  ResolvedRateLimitOptions,
  'timeout' | 'maxWait' | 'breaker' | 'failureMode' | 'instances' | 'metrics'
>;

/**
 * How many times what answers lately took (SilenceDetector.recentLatency) a decision stays
 * wanted past its deadline (`wantedUntil`): on a loaded machine latency swings widely, and a
 * script that starts after its wantedUntil must be asked again, which a loaded machine can
 * least afford (capped at 40 ms, overloaded pods failed open: docs/failure-modes.md). A
 * silent store is not waited on past the deadline (see Attempt).
 */
const LATENCY_MARGIN = 4;

/**
 * Turns the store's decision on `request` into the caller's answer: the request travels
 * with it, so one function can serve every call.
 */
type Finish<Q extends DecideRequest, R> = (decision: StoreDecision, request: Q) => R;

/**
 * Everything between the limiter and its store when things go wrong, in one place: the
 * deadline that tells a silent store from a late process, the circuit breaker, and the
 * local fallback of failureMode 'local'. Store-agnostic: it judges the store only by its
 * answers.
 */
export class ResilientStore {
  private lastFailure = '';
  /** Set by close(): no probe starts after it. */
  private closed = false;
  /** The whole store: a single node, or requests on no one node of a store of several. */
  private readonly whole: StoreNode;
  /** For a store of several nodes: each one's silence and breaker. */
  private readonly nodes: StoreNodes | undefined;
  private readonly local: LocalFallback | undefined;
  /** Set when the store can tell its time: then decisions carry `wantedUntil`. */
  private readonly clock: StoreClock | undefined;
  private readonly outage: OutageLog;
  /** The failure modes in force, in words (describeFailureModes). */
  private failureModes: string;
  /** Whether the store's last call failed: what health checks read. */
  private readonly health = new StoreHealth();
  /** Stops listening for the store's connection becoming ready. */
  private readonly stopReadyListener: (() => void) | undefined;

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: ResilientStoreOptions,
    private readonly logger: Logger,
  ) {
    const { breaker, instances } = options;
    this.whole = {
      silence: new SilenceDetector(),
      breaker:
        breaker &&
        new CircuitBreaker(breaker, (open) => {
          this.reportBreaker(open);
          if (!open || !store.time) return;
          this.probeWhileOpen(this.whole, () => callStore(store, store.time!, undefined));
        }),
    };
    const probeNode =
      store.nodeTime &&
      ((name: string, node: StoreNode) =>
        this.probeWhileOpen(node, () => callStore(store, store.nodeTime!, name)));
    this.nodes =
      store.nodeOf && new StoreNodes(breaker, () => this.failureModes, logger, probeNode);
    this.local = instances === undefined ? undefined : new LocalFallback(instances);
    this.clock = store.time && new StoreClock(() => store.time!());
    // A connection that takes commands again ends the outage for the breaker at once: no
    // request waits for a probe's answer (or, without time(), for halfOpenAfter).
    const wholeBreaker = this.whole.breaker;
    this.stopReadyListener = store.onReady?.(() => {
      wholeBreaker?.succeeded();
      this.health.answered();
    });
    this.failureModes = describeFailureModes(options.failureMode, new Map(), instances);
    this.outage = new OutageLog(logger, this.meanwhile());
  }

  /**
   * Names the routes whose failure mode is not the module's (by mode) in the outage and
   * breaker warnings, so that they say what applies where.
   */
  nameFailureModes(routes: ReadonlyMap<FailureMode, readonly string[]>): void {
    const { failureMode, instances } = this.options;
    this.failureModes = describeFailureModes(failureMode, routes, instances);
    this.outage.meanwhile = this.meanwhile();
  }

  private meanwhile(): string {
    return `until it answers, ${this.failureModes} applies`;
  }

  /**
   * Decides `request`, asked at monotonic instant `askedAt`. `finish` turns the decision into
   * the caller's answer where the decision arrives, saving the caller a promise layer of its
   * own. A failure the local fallback does not take rejects with RateLimitUnavailableException.
   */
  decide<Q extends DecideRequest, R>(
    request: Q,
    askedAt: number,
    finish: Finish<Q, R>,
  ): Promise<R> {
    return this.attempt(request, askedAt, this.options.maxWait, finish);
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.local?.reset(keys);
    await this.callWithDeadline(this.store.reset, keys);
  }

  /**
   * Gives a charge back (RateLimitStore.refund), with the deadline and breaker of a reset; a
   * store without refund does nothing (the planner refuses routes that need it at start).
   */
  async refund(request: RefundRequest): Promise<void> {
    if (this.store.refund) await this.callWithDeadline(this.store.refund, request);
  }

  /** One store call other than a decision: within the deadline, through the breaker. */
  private async callWithDeadline<A>(
    method: (this: RateLimitStore, argument: A) => Promise<void>,
    argument: A,
  ): Promise<void> {
    const askedAt = performance.now();
    const pass = this.whole.breaker?.pass() ?? 'closed';
    if (pass === 'refused') throw this.unavailable(this.refused(askedAt));
    const { timeout, maxWait } = this.options;
    await this.whole.silence.withDeadline(
      callStore(this.store, method, argument),
      { wantedFor: timeout, timeout, maxWait },
      askedAt,
      () => this.succeeded(askedAt),
      (error: unknown) => {
        this.failed(error, pass, askedAt);
        throw this.unavailable(error);
      },
    );
  }

  /** What the limiter has seen of the store's health, for a health check (no call to it). */
  healthReading(): StoreHealthReading {
    return {
      notReady: this.store.whyNotReady?.(),
      failing: this.health.failing(),
      breakerOpen: this.whole.breaker?.isOpen ?? false,
      nodesWithBreakerOpen: this.nodes?.withBreakerOpen() ?? [],
      failureModes: this.failureModes,
    };
  }

  /**
  /**
   * The store's clock at monotonic instant `at`, never earlier than the truth and later by
   * at most a recent sample's round trip; undefined while no sample has come back or the
   * store cannot tell its time.
   */
  storeTimeAt(at: number): number | undefined {
    return this.clock?.at(at);
  }

  close(): Promise<void> {
    this.closed = true;
    this.stopReadyListener?.();
    return this.local?.close() ?? Promise.resolve();
  }

  /**
   * One try at a decision. It is wanted until `wantedFor` ms from now: the deadline plus a
   * margin over how long answers have lately taken (long only on a busy process or machine),
   * within maxWait; the store, told so as `wantedUntil`, charges nothing after then. A store
   * silent for the whole deadline is given up on then, even before wantedFor. Should the
   * store answer such a call within the margin after all, it charges a
   * request the failure mode answered: one it admitted ('open', 'local') or refused
   * ('closed'), never one more than the limit allows. A failure goes to the local fallback,
   * if any.
   */
  private attempt<Q extends DecideRequest, R>(
    request: Q,
    askedAt: number,
    maxWait: number,
    finish: Finish<Q, R>,
  ): Promise<R> {
    const { silence, breaker } = this.nodeFor(request.keys);
    const pass = breaker?.pass() ?? 'closed';
    if (pass === 'refused') return this.fail(request, this.refused(askedAt), finish);
    const { timeout } = this.options;
    const wantedFor = Math.min(maxWait, timeout + LATENCY_MARGIN * silence.recentLatency());
    const wantedUntil = this.clock?.at(askedAt + wantedFor, askedAt);
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
            lease: request.lease,
          };
    return silence.wait(
      callStore(this.store, this.store.decide, asked),
      new Attempt(this, request, askedAt, wantedFor, timeout, maxWait, breaker, pass, finish),
    );
  }

  /** What an attempt's answer becomes: the caller's answer, or another attempt if stale. */
  answered<Q extends DecideRequest, R>(
    attempt: Attempt<Q, R>,
    decision: StoreDecision,
  ): R | Promise<R> {
    const { request, startedAt, finish } = attempt;
    this.succeeded(startedAt, attempt.breaker);
    if (!decision.stale) return finish(decision, request);
    return this.retryStale(request, startedAt, attempt.wantedFor, attempt.maxWait, finish);
  }

  /** What an attempt's failure becomes: the local fallback's decision, or a rejection. */
  failedAttempt<Q extends DecideRequest, R>(attempt: Attempt<Q, R>, error: unknown): Promise<R> {
    this.failed(error, attempt.pass, attempt.startedAt, attempt.breaker);
    return this.fail(attempt.request, this.named(attempt, error), attempt.finish);
  }

  /**
   * The deadline names the cap it was given, which for a try after stale answers is only
   * what was left of maxWait: such a try's cap is named as the option, with what led there.
   */
  private named<Q extends DecideRequest, R>(attempt: Attempt<Q, R>, error: unknown): unknown {
    const { maxWait } = this.options;
    const capped = performance.now() - attempt.startedAt >= attempt.maxWait;
    if (!(error instanceof DeadlineExceededError) || attempt.maxWait >= maxWait || !capped) {
      return error;
    }
    return new DeadlineExceededError(
      `answers came too late to count (stale), then none within maxWait ${maxWait} ms`,
      { cause: error },
    );
  }

  /**
   * A stale answer charged nothing: the script ran after the decision stopped being wanted,
   * yet this process still waits (it was the late one). Ask again within what is left of
   * maxWait (`waitLeft` ms from `askedAt`). Stale though it came back in time, it proves the store's clock moved.
   */
  private retryStale<Q extends DecideRequest, R>(
    request: Q,
    askedAt: number,
    wantedFor: number,
    waitLeft: number,
    finish: Finish<Q, R>,
  ): Promise<R> {
    const now = performance.now();
    if (now < askedAt + wantedFor) this.clock?.forget();
    const left = waitLeft - (now - askedAt);
    if (left > 0) return this.attempt(request, now, left, finish);
    const error = new DeadlineExceededError(
      `every answer came too late to count (stale) within maxWait ${this.options.maxWait} ms`,
    );
    return this.fail(request, error, finish);
  }

  private refused(askedAt: number): CircuitOpenError {
    const error = new CircuitOpenError(`circuit breaker open (last failure: ${this.lastFailure})`);
    this.options.metrics?.storeFailed('circuit_open', askedAt);
    this.outage.failed(error);
    return error;
  }

  /** The node that decides on `keys`, or the whole store. */
  private nodeFor(keys: readonly string[]): StoreNode {
    const name = this.nodes && this.store.nodeOf!(keys);
    return name === undefined ? this.whole : this.nodes!.for(name);
  }

  private succeeded(askedAt: number, breaker = this.whole.breaker): void {
    this.options.metrics?.storeAnswered(askedAt);
    this.outage.answered();
    this.health.answered();
    breaker?.succeeded();
  }

  /**
   * Only silence counts against the breaker: a call that failed fast (an error reply, a
   * connection refused) cost no waiting, and proves the store can answer, so it closes an
   * open breaker as a success would. Requests then fail fast on their own until the store
   * decides again, and decide on it the moment it does.
   */
  private failed(
    error: unknown,
    pass: BreakerPass,
    askedAt: number,
    breaker = this.whole.breaker,
  ): void {
    this.options.metrics?.storeFailed(failureKind(error), askedAt);
    this.lastFailure = error instanceof Error ? error.message : String(error);
    this.outage.failed(error);
    this.health.failed(error);
    if (error instanceof DeadlineExceededError) breaker?.failed(pass);
    else breaker?.succeeded();
  }

  /**
   * While `node`'s breaker is open, asks it something cheap (`ask`: its time; a synchronous
   * throw comes as a rejection), one call at a time, so that the first answer after a stall
   * closes the breaker at once instead of at the next request's probe (up to halfOpenAfter
   * later). A call that times out has waited a whole deadline: the next goes at once. Stores
   * without time() (nodeTime() for a node) are probed by requests only.
   */
  private probeWhileOpen(node: StoreNode, ask: () => Promise<unknown>): void {
    const { silence, breaker } = node;
    if (!breaker?.isOpen || this.closed) return;
    const { timeout } = this.options;
    const askedAt = performance.now();
    void silence.withDeadline(
      ask(),
      { wantedFor: timeout, timeout, maxWait: timeout },
      askedAt,
      () => {
        breaker.succeeded();
        this.health.answered();
      },
      (error: unknown) => {
        if (error instanceof DeadlineExceededError) this.probeWhileOpen(node, ask);
        else breaker.succeeded();
      },
    );
  }

  /** A decision the store could not make: the local fallback makes it, if there is one. */
  private fail<Q extends DecideRequest, R>(
    request: Q,
    error: unknown,
    finish: Finish<Q, R>,
  ): Promise<R> {
    // The route's mode is worked out here, on failure only: deciding never pays for it.
    if (
      this.local &&
      strictestFailureMode(request.policies, this.options.failureMode) === 'local'
    ) {
      return this.decideLocally(request).then((decision) => finish(decision, request));
    }
    return Promise.reject(this.unavailable(error));
  }

  /**
   * Store failures (thrown, rejected, silent or refused by the breaker) as the limiter
   * reports them: the default message, which a client may see, and the store's error as the
   * cause, which only the log and the app's code see.
   */
  private unavailable(error: unknown): RateLimitUnavailableException {
    return new RateLimitUnavailableException(
      undefined,
      retryAfterSeconds(this.options.timeout),
      error,
    );
  }

  private decideLocally(request: DecideRequest): Promise<StoreDecision> {
    return this.local!.decide(request).then((decision) => ({ ...decision, local: true }));
  }

  private reportBreaker(open: boolean): void {
    const { breaker } = this.options;
    if (open) {
      this.logger.warn(
        `Rate limit store silent ${breaker!.failures} times in a row (${this.lastFailure}): circuit breaker open, ` +
          `decisions take ${this.failureModes} without waiting until it answers; ` +
          (this.store.time
            ? 'probing it in the background'
            : `one probe every ${breaker!.halfOpenAfter} ms`),
      );
    } else {
      this.logger.log('Rate limit store answering again: circuit breaker closed');
    }
  }
}

/** One try at a decision, waiting on the store: all it needs in one object. */
class Attempt<Q extends DecideRequest, R> extends WaitingCall<StoreDecision, R> {
  constructor(
    private readonly owner: ResilientStore,
    readonly request: Q,
    askedAt: number,
    readonly wantedFor: number,
    timeout: number,
    maxWait: number,
    readonly breaker: CircuitBreaker | undefined,
    readonly pass: BreakerPass,
    readonly finish: Finish<Q, R>,
  ) {
    // First checked at the deadline, not at wantedFor: the silence a check judges is exact
    // however late this process runs (SilenceDetector.check), so a silent store costs a
    // decision the deadline and this process's own lag, not the latency margin.
    super(askedAt, timeout, timeout, maxWait);
  }

  answered(decision: StoreDecision): R | Promise<R> {
    return this.owner.answered(this, decision);
  }

  failed(error: unknown): Promise<R> {
    return this.owner.failedAttempt(this, error);
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
