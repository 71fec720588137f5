/** Raised when the store stays silent past the `timeout` option, or an answer is later than `maxWait`. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/** A check later than this share of the timeout finds the process too busy to judge the store. */
const LATE_CHECK = 0.25;

/** The span over which the slowest recent answer is remembered, in ms. */
const LATENCY_SPAN_MS = 1_000;

/** The requests started in one turn of the event loop, and when they went out. */
interface SendBatch {
  sentAt: number;
}

/** In ms: `patience` before the first check, then `timeout` of silence, or `maxWait` in all. */
export interface DeadlineLimits {
  readonly patience: number;
  readonly timeout: number;
  readonly maxWait: number;
}

/** A request waiting on the store, linked in its meter's list until it settles. */
interface Waiting {
  readonly startedAt: number;
  readonly timeout: number;
  readonly maxWait: number;
  readonly batch: SendBatch;
  /** When it is next checked (monotonic ms). */
  due: number;
  /** Settles the request with what its failure handler makes of `error`. */
  readonly fail: (error: unknown) => void;
  previous: Waiting | undefined;
  next: Waiting | undefined;
}

/**
 * Tells "the store is silent" from "this process is late". The store is silent when nothing
 * at all has been answered since a request went out; a busy event loop only delays when
 * requests go out and when answers are read, which says nothing of the store. Time is
 * monotonic (`performance.now()`).
 */
export class SilenceMeter {
  private lastAnswerAt = -Infinity;
  private batch: SendBatch | undefined;
  /** The slowest answer (from asking to hearing) in this span and the previous one. */
  private latency = { spanStart: 0, current: 0, previous: 0 };
  private readonly stamp = (): void => {
    this.batch!.sentAt = performance.now();
    this.batch = undefined;
  };
  /**
   * Every request waiting under a deadline, oldest first, and one timer for all of them,
   * set for the earliest check due: a timer per request cost more than anything else the
   * deadline does.
   */
  private first: Waiting | undefined;
  private last: Waiting | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (monotonic ms); Infinity while none is set. */
  private timerAt = Infinity;
  private readonly fire = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    // When a timer fires, answers may already be waiting in the socket: a busy event loop
    // runs timers before it reads I/O. setImmediate lets that read happen first.
    setImmediate(this.checkDue);
  };
  private readonly checkDue = (): void => {
    const now = performance.now();
    let earliest = Infinity;
    for (let waiting = this.first; waiting;) {
      const next = waiting.next;
      if (waiting.due <= now) this.check(waiting, now);
      // A request the check rejected is out of the list, and its due no longer counts.
      if (waiting.due < earliest && this.isWaiting(waiting)) earliest = waiting.due;
      waiting = next;
    }
    this.wakeAt(earliest);
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
   * How long answers have lately taken, from asking to hearing, at most: on a busy process
   * or machine, requests wait to go out (ioredis sends one auto-pipeline at a time) and
   * answers wait to be read. Near zero when all is well.
   */
  recentLatency(): number {
    return Math.max(this.latency.current, this.latency.previous);
  }

  /** Any answer is a sign of life, even one that comes after its deadline. */
  heard(askedAt: number): void {
    const now = performance.now();
    this.lastAnswerAt = now;
    const { latency } = this;
    if (now - latency.spanStart > LATENCY_SPAN_MS) {
      latency.previous = now - latency.spanStart > 2 * LATENCY_SPAN_MS ? 0 : latency.current;
      latency.current = 0;
      latency.spanStart = now;
    }
    latency.current = Math.max(latency.current, now - askedAt);
  }

  /** How long the store has gone without answering since `batch` went out, in ms. */
  silentFor(batch: SendBatch): number {
    return performance.now() - Math.max(this.lastAnswerAt, batch.sentAt);
  }

  /**
   * Settles with `work`, or fails once the store is silent for `timeout` ms (as seen by a
   * check that ran on time), or once `maxWait` ms have passed; never before `patience` ms
   * (at least `timeout`), the time until which the answer is wanted. While answers keep
   * arriving, or while this process is too late to judge (its own check ran late), the
   * request waits on, so an overloaded pod does not mistake its own lag, or the whole
   * machine's, for a failed store. This is the limiter's own deadline, whatever retry or
   * offline-queue settings the Redis client was given. Time counts from `startedAt`.
   *
   * `onAnswer` and `onFailure` (a DeadlineExceededError, or the store's own error) work as
   * `then` on the result would, without the promise a `then` adds on every request.
   */
  withDeadline<T, R = T>(
    work: Promise<T>,
    { patience, timeout, maxWait }: DeadlineLimits,
    startedAt = performance.now(),
    onAnswer?: (answer: T) => R | PromiseLike<R>,
    onFailure?: (error: unknown) => R | PromiseLike<R>,
  ): Promise<R> {
    const batch = this.sending();
    return new Promise<R>((resolve, reject) => {
      const waiting: Waiting = {
        startedAt,
        timeout,
        maxWait,
        batch,
        due: startedAt + patience,
        fail: onFailure ? (error) => settle(resolve, reject, onFailure, error) : reject,
        previous: this.last,
        next: undefined,
      };
      this.watch(waiting);
      work.then(
        (answer) => {
          this.heard(startedAt);
          if (!this.unwatch(waiting)) return;
          if (onAnswer) settle(resolve, reject, onAnswer, answer);
          else resolve(answer as unknown as R);
        },
        (error: unknown) => {
          if (this.unwatch(waiting)) waiting.fail(error);
        },
      );
    });
  }

  /**
   * A check at its due time: the request fails if the store has been silent for its timeout
   * and this check ran on time, or if maxWait has passed; else it is checked again later.
   */
  private check(waiting: Waiting, now: number): void {
    const { startedAt, timeout, maxWait, batch } = waiting;
    const waited = now - startedAt;
    const silence = this.silentFor(batch);
    if (waited < maxWait && (silence < timeout || now - waiting.due > timeout * LATE_CHECK)) {
      // Not silent, or this check ran late: then the machine was too busy to judge the
      // store by its silence, so it gets a full deadline more, within maxWait.
      waiting.due =
        now + Math.min(silence < timeout ? timeout - silence : timeout, maxWait - waited);
      return;
    }
    this.unwatch(waiting);
    waiting.fail(
      new DeadlineExceededError(
        waited < maxWait
          ? `no answer within ${timeout} ms (store silent)`
          : `no answer within maxWait ${maxWait} ms (the store answers others, or this process is overloaded)`,
      ),
    );
  }

  private watch(waiting: Waiting): void {
    if (this.last) this.last.next = waiting;
    else this.first = waiting;
    this.last = waiting;
    this.wakeAt(waiting.due);
  }

  /** Takes a request out of the list; false if it was out already (settled once). */
  private unwatch(waiting: Waiting): boolean {
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

  private isWaiting(waiting: Waiting): boolean {
    return waiting.previous !== undefined || this.first === waiting;
  }

  /** Makes sure the timer fires by `at`, not before (monotonic ms); Infinity: no need. */
  private wakeAt(at: number): void {
    if (at >= this.timerAt || at === Infinity) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // A timer counts from the event loop's cached clock, which may be a millisecond behind:
    // rounding up keeps a check from running before it is due.
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(at - performance.now())));
  }
}

/** Resolves with `handle(value)`, or rejects with what it throws, as `then` would. */
function settle<V, R>(
  resolve: (result: R | PromiseLike<R>) => void,
  reject: (error: unknown) => void,
  handle: (value: V) => R | PromiseLike<R>,
  value: V,
): void {
  try {
    resolve(handle(value));
  } catch (error) {
    reject(error);
  }
}
