/** Raised when the store stays silent past the `timeout` option, or an answer is later than `maxWait`. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/** A check later than this share of the timeout finds the process too busy to judge the store. */
const LATE_CHECK = 0.25;

/** The requests started in one turn of the event loop, and when they went out. */
interface SendBatch {
  sentAt: number;
}

/**
 * Tells "the store is silent" from "this process is late". The store is silent when nothing
 * at all has been answered since a request went out; a busy event loop only delays when
 * requests go out (ioredis flushes its auto-pipeline in setImmediate) and when answers are
 * read, which says nothing of the store. Time is monotonic (`performance.now()`).
 */
export class SilenceMeter {
  private lastAnswerAt = -Infinity;
  private batch: SendBatch | undefined;
  private readonly stamp = (): void => {
    this.batch!.sentAt = performance.now();
    this.batch = undefined;
  };

  /**
   * Called as a request goes to the store. The request is on the wire by the next check
   * phase of the event loop, where one immediate per turn (not per request) stamps the time.
   */
  sending(): SendBatch {
    if (!this.batch) {
      this.batch = { sentAt: Infinity };
      setImmediate(this.stamp);
    }
    return this.batch;
  }

  /** Any answer is a sign of life, even one that comes after its deadline. */
  heard(): void {
    this.lastAnswerAt = performance.now();
  }

  /** How long the store has gone without answering since `batch` went out, in ms. */
  silentFor(batch: SendBatch): number {
    return performance.now() - Math.max(this.lastAnswerAt, batch.sentAt);
  }
}

/**
 * Settles with `work`, or rejects once the store is silent for `timeout` ms (see
 * SilenceMeter), as seen by a check that ran on time, or once `maxWait` ms have passed.
 * While answers keep arriving, or while this process is too late to judge (its own check
 * ran late), the request waits on, so an overloaded pod does not mistake its own lag, or
 * the whole machine's, for a failed store. This is the limiter's own
 * deadline, whatever retry or offline-queue settings the Redis client was given. Written out
 * rather than with Promise.race: it runs on every request, and this allocates less.
 */
export function withDeadline<T>(
  work: Promise<T>,
  timeout: number,
  maxWait: number,
  meter: SilenceMeter,
): Promise<T> {
  const batch = meter.sending();
  return new Promise<T>((resolve, reject) => {
    const startedAt = performance.now();
    let settled = false;
    let timer: NodeJS.Timeout;
    let due = startedAt + timeout;
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
    timer = setTimeout(expire, timeout);
    work.then(
      (value) => {
        meter.heard();
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
