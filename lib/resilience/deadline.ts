/** Raised when the store stays silent past the `timeout` option, or an answer is later than `maxWait`. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/** The span over which the slowest recent answers are remembered, in ms. */
const LATENCY_SPAN_MS = 1_000;

/** The slowest answers of a span (from asking to hearing, in ms), and how many it had. */
interface LatencySpan {
  start: number;
  count: number;
  slowest: number;
  second: number;
  third: number;
}

/** The requests started in one turn of the event loop, and when they went out. */
interface SendBatch {
  sentAt: number;
}

/** In ms: `wantedFor` before the first check, then `timeout` of silence, or `maxWait` in all. */
export interface DeadlineLimits {
  readonly wantedFor: number;
  readonly timeout: number;
  readonly maxWait: number;
}

/**
 * One call waiting on the store under a deadline (see SilenceDetector.wait): what its answer
 * and its failure become, and the meter's bookkeeping. Whoever waits subclasses it, so that
 * one object holds all a call needs: the hot path allocates little.
 */
export abstract class WaitingCall<T, R> {
  /** When it is next checked (monotonic ms). */
  due: number;
  /** The rest is the meter's, set as the call goes out. */
  batch: SendBatch | undefined;
  resolve: ((result: R | PromiseLike<R>) => void) | undefined;
  reject: ((error: unknown) => void) | undefined;
  previous: WaitingCall<unknown, unknown> | undefined;
  next: WaitingCall<unknown, unknown> | undefined;

  /** Times in ms; see DeadlineLimits. */
  constructor(
    readonly startedAt: number,
    wantedFor: number,
    readonly timeout: number,
    readonly maxWait: number,
  ) {
    this.due = startedAt + wantedFor;
  }

  /** What the store's answer becomes; may throw or reject, as in `then`. */
  abstract answered(answer: T): R | PromiseLike<R>;

  /** What a failure becomes: a DeadlineExceededError, or the store's own error. */
  abstract failed(error: unknown): R | PromiseLike<R>;
}

/** A WaitingCall that hands its outcome to functions, as `then` would. */
class HandledCall<T, R> extends WaitingCall<T, R> {
  constructor(
    startedAt: number,
    { wantedFor, timeout, maxWait }: DeadlineLimits,
    private readonly onAnswer: ((answer: T) => R | PromiseLike<R>) | undefined,
    private readonly onFailure: ((error: unknown) => R | PromiseLike<R>) | undefined,
  ) {
    super(startedAt, wantedFor, timeout, maxWait);
  }

  answered(answer: T): R | PromiseLike<R> {
    return this.onAnswer ? this.onAnswer(answer) : (answer as unknown as R);
  }

  failed(error: unknown): R | PromiseLike<R> {
    if (this.onFailure) return this.onFailure(error);
    throw error;
  }
}

/**
 * The settling functions of the promise being made: an executor shared by every call
 * instead of a closure per call.
 */
const settlers: {
  resolve: ((result: never) => void) | undefined;
  reject: ((error: unknown) => void) | undefined;
} = { resolve: undefined, reject: undefined };
function captureSettlers(resolve: (result: never) => void, reject: (error: unknown) => void) {
  settlers.resolve = resolve;
  settlers.reject = reject;
}

/**
 * Tells "the store is silent" from "this process is late". The store is silent when nothing
 * at all has been answered since a request went out; a busy event loop only delays when
 * requests go out and when answers are read, which says nothing of the store. Time is
 * monotonic (`performance.now()`).
 */
export class SilenceDetector {
  private lastAnswerAt = -Infinity;
  private batch: SendBatch | undefined;
  private readonly span: LatencySpan = { start: 0, count: 0, slowest: 0, second: 0, third: 0 };
  /** What recentLatency made of the previous span; 0 once it began over two spans ago. */
  private previousLatency = 0;
  private readonly stamp = (): void => {
    this.batch!.sentAt = performance.now();
    this.batch = undefined;
  };
  /**
   * Every request waiting under a deadline, oldest first, and one timer for all of them,
   * set for the earliest check due: a timer per request cost more than anything else the
   * deadline does.
   */
  private first: WaitingCall<unknown, unknown> | undefined;
  private last: WaitingCall<unknown, unknown> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (monotonic ms); Infinity while none is set, -Infinity while a check is queued. */
  private timerAt = Infinity;
  /**
   * When the queued check was queued. Every answer that had reached the socket by then is
   * read before the check runs (see `look`): up to that instant, and not beyond, the check
   * knows exactly whether the store was silent, however late this process ran.
   */
  private lookedAt = -Infinity;
  private readonly fire = (): void => {
    this.timer = undefined;
    this.look();
  };
  private readonly checkDue = (): void => {
    const now = performance.now();
    this.timerAt = Infinity;
    let earliest = Infinity;
    for (let waiting = this.first; waiting;) {
      const next = waiting.next;
      if (waiting.due <= now) this.check(waiting, now);
      // A request the check rejected is out of the list, and its due no longer counts.
      if (waiting.due < earliest && this.isWaiting(waiting)) earliest = waiting.due;
      waiting = next;
    }
    // Due already (its silence reached the timeout while this check was queued): checked
    // again after the next turn's I/O, not a timer later. Queued from here, the check phase,
    // a check runs after a poll that began later; queued from I/O it would not.
    if (earliest <= performance.now()) this.look();
    else this.wakeAt(earliest);
  };

  /**
   * Called as a request goes to the store. It leaves no earlier than the next check phase
   * of the event loop (ioredis flushes its auto-pipeline there), where one immediate per
   * turn, not per request, stamps the time.
   */
  sending(): SendBatch {
    if (!this.batch) {
      this.batch = { sentAt: Infinity };
      setImmediate(this.stamp);
    }
    return this.batch;
  }

  /**
   * How long answers have lately taken, from asking to hearing: on a busy process or
   * machine, requests wait to go out (ioredis sends one auto-pipeline at a time) and answers
   * wait to be read. Near zero when all is well. Of this span and the previous one, the
   * larger of their third slowest answers (with fewer, their fastest): slowness that lasts
   * (an overloaded process, machine or store) delays many answers, while a process
   * descheduled once delays only the one or two it had in flight; it needs no margin for
   * them, since its late checks already keep it from judging the store.
   */
  recentLatency(): number {
    return Math.max(spanLatency(this.span), this.previousLatency);
  }

  /** Any answer is a sign of life, even one that comes after its deadline. */
  heard(askedAt: number): void {
    const now = performance.now();
    this.lastAnswerAt = now;
    const { span } = this;
    if (now - span.start > LATENCY_SPAN_MS) {
      this.previousLatency = now - span.start > 2 * LATENCY_SPAN_MS ? 0 : spanLatency(span);
      span.start = now;
      span.count = span.slowest = span.second = span.third = 0;
    }
    const took = now - askedAt;
    span.count++;
    if (took > span.slowest) {
      span.third = span.second;
      span.second = span.slowest;
      span.slowest = took;
    } else if (took > span.second) {
      span.third = span.second;
      span.second = took;
    } else if (took > span.third) span.third = took;
  }

  /** How long the store had gone without answering since `batch` went out, at `at` (ms). */
  silentFor(batch: SendBatch, at = performance.now()): number {
    return at - Math.max(this.lastAnswerAt, batch.sentAt);
  }

  /**
   * Settles with `work`, or fails once the store is silent for `timeout` ms (see `check`),
   * or once `maxWait` ms have passed; never before `wantedFor` ms, the time until which the
   * answer is wanted. While answers keep arriving the request waits on, so an overloaded pod
   * does not mistake its own lag for a failed store: silence counts only up to an instant
   * by which every answer that came has been read. This is the limiter's own deadline,
   * whatever retry or offline-queue settings the Redis client was given. Time counts from
   * `startedAt`.
   *
   * `onAnswer` and `onFailure` (a DeadlineExceededError, or the store's own error) work as
   * `then` on the result would, without the promise a `then` adds.
   */
  withDeadline<T, R = T>(
    work: Promise<T>,
    limits: DeadlineLimits,
    startedAt = performance.now(),
    onAnswer?: (answer: T) => R | PromiseLike<R>,
    onFailure?: (error: unknown) => R | PromiseLike<R>,
  ): Promise<R> {
    return this.wait(work, new HandledCall(startedAt, limits, onAnswer, onFailure));
  }

  /** withDeadline for a call that carries its own limits and handlers: the hot path. */
  wait<T, R>(work: Promise<T>, call: WaitingCall<T, R>): Promise<R> {
    const promise = new Promise<R>(captureSettlers);
    call.resolve = settlers.resolve as (result: R | PromiseLike<R>) => void;
    call.reject = settlers.reject;
    call.batch = this.sending();
    call.previous = this.last;
    // One list holds calls of every type.
    const waiting = call as unknown as WaitingCall<unknown, unknown>;
    this.watch(waiting);
    work.then(
      (answer) => {
        this.heard(call.startedAt);
        if (this.unwatch(waiting)) settle(call, answered, answer);
      },
      (error: unknown) => {
        if (this.unwatch(waiting)) settle(call, failed, error);
      },
    );
    return promise;
  }

  /**
   * A check at its due time: the request fails if the store was silent for its timeout up to
   * when this check was queued (`lookedAt`), or if maxWait has passed; else it is checked
   * again when that silence would reach the timeout. Silence is judged only up to
   * `lookedAt`: an answer that reached the socket by then, while this process was busy or
   * descheduled, has been read, so this process's lag is never taken for the store's, and a
   * check that ran late judges as one on time.
   */
  private check(waiting: WaitingCall<unknown, unknown>, now: number): void {
    const { startedAt, timeout, maxWait } = waiting;
    const waited = now - startedAt;
    const silence = this.silentFor(waiting.batch!, this.lookedAt);
    if (waited < maxWait && silence < timeout) {
      // A batch not yet on the wire is silent from no sooner than now.
      const silentSince = Math.min(this.lookedAt - silence, now);
      waiting.due = Math.min(silentSince + timeout, startedAt + maxWait);
      return;
    }
    this.unwatch(waiting);
    settle(
      waiting,
      failed,
      new DeadlineExceededError(
        waited < maxWait
          ? `no answer within ${timeout} ms (store silent)`
          : `no answer within maxWait ${maxWait} ms (the store answers others, or this process is overloaded)`,
      ),
    );
  }

  private watch(waiting: WaitingCall<unknown, unknown>): void {
    if (this.last) this.last.next = waiting;
    else this.first = waiting;
    this.last = waiting;
    this.wakeAt(waiting.due);
  }

  /** Takes a request out of the list; false if it was out already (settled once). */
  private unwatch(waiting: WaitingCall<unknown, unknown>): boolean {
    if (!this.isWaiting(waiting)) return false;
    const { previous, next } = waiting;
    if (previous) previous.next = next;
    else this.first = next;
    if (next) next.previous = previous;
    else this.last = previous;
    waiting.previous = waiting.next = undefined;
    // Nothing left to watch: no timer holds the process open.
    if (!this.first && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.timerAt = Infinity;
    }
    return true;
  }

  private isWaiting(waiting: WaitingCall<unknown, unknown>): boolean {
    return waiting.previous !== undefined || this.first === waiting;
  }

  /** Makes sure the timer fires by `at`, not before (monotonic ms); Infinity: no need. */
  private wakeAt(at: number): void {
    // Infinity (no need) is never below timerAt, nor anything while a check is queued (it
    // sets the next timer), so it returns here too.
    if (at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // A timer counts from the event loop's cached clock, which may be a millisecond behind:
    // rounding up keeps a check from running before it is due.
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(at - performance.now())));
  }

  /**
   * Queues a check, from a timer or from a check: answers may be waiting in the socket
   * already, and an immediate queued in the timers or the check phase runs after a poll for
   * I/O that began later, so every answer that had come by now is read when it runs.
   */
  private look(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = -Infinity;
    this.lookedAt = performance.now();
    setImmediate(this.checkDue);
  }
}

/** A span's third slowest answer, or with fewer answers the fastest of them; 0 for none. */
function spanLatency({ count, slowest, second, third }: LatencySpan): number {
  return count >= 3 ? third : count === 2 ? second : slowest;
}

const answered = <T, R>(call: WaitingCall<T, R>, answer: T) => call.answered(answer);
const failed = <T, R>(call: WaitingCall<T, R>, error: unknown) => call.failed(error);

/** Settles `call` with what `handle` makes of `value`, or with what it throws, as `then` would. */
function settle<T, R, V>(
  call: WaitingCall<T, R>,
  handle: (call: WaitingCall<T, R>, value: V) => R | PromiseLike<R>,
  value: V,
): void {
  try {
    call.resolve!(handle(call, value));
  } catch (error) {
    call.reject!(error);
  }
}
