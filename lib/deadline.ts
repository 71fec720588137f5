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
}

/** In ms: `patience` before the first check, then `timeout` of silence, or `maxWait` in all. */
export interface DeadlineLimits {
  readonly patience: number;
  readonly timeout: number;
  readonly maxWait: number;
}

/**
 * Settles with `work`, or rejects once the store is silent for `timeout` ms (see
 * SilenceMeter), as seen by a check that ran on time, or once `maxWait` ms have passed;
 * never before `patience` ms (at least `timeout`), the time until which the answer is
 * wanted. While answers keep arriving, or while this process is too late to judge (its own
 * check ran late), the request waits on, so an overloaded pod does not mistake its own lag,
 * or the whole machine's, for a failed store. This is the limiter's own deadline, whatever
 * retry or offline-queue settings the Redis client was given. Written out rather than with
 * Promise.race: it runs on every request, and this allocates less.
 */
export function withDeadline<T>(
  work: Promise<T>,
  { patience, timeout, maxWait }: DeadlineLimits,
  meter: SilenceMeter,
  startedAt = performance.now(),
): Promise<T> {
  const batch = meter.sending();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout;
    let due = startedAt + patience;
    const check = (): void => {
      if (settled) return;
      const now = performance.now();
      const waited = now - startedAt;
      const silence = meter.silentFor(batch);
      if (waited < maxWait && (silence < timeout || now - due > timeout * LATE_CHECK)) {
        // Not silent, or this check ran late: then the machine was too busy to judge the
        // store by its silence, so it gets a full deadline more, within maxWait.
        const next = Math.min(silence < timeout ? timeout - silence : timeout, maxWait - waited);
        due = now + next;
        timer = setTimeout(expire, next);
        return;
      }
      settled = true;
      reject(
        new DeadlineExceededError(
          waited < maxWait
            ? `no answer within ${timeout} ms (store silent)`
            : `no answer within maxWait ${maxWait} ms (the store answers others, or this process is overloaded)`,
        ),
      );
    };
    // When a timer fires, answers may already be waiting in the socket: a busy event loop
    // runs timers before it reads I/O. setImmediate lets that read happen first.
    const expire = (): void => void setImmediate(check);
    timer = setTimeout(expire, patience);
    work.then(
      (value) => {
        meter.heard(startedAt);
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
