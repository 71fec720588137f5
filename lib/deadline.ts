/** Raised when a decision is not back within the `timeout` option. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/**
 * Settles with `work`, or rejects once `ms` have passed: the limiter's own deadline,
 * whatever retry or offline-queue settings the Redis client was given. Written out rather
 * than as Promise.race(...).finally(...): it runs on every request, and this allocates less.
 */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // When the timer fires, the answer may already be waiting in the socket: a busy event
    // loop runs timers before it reads I/O. setImmediate lets that read happen first, so
    // the app's own lag is not mistaken for a late store. (A second settle is a no-op.)
    const expire = () => reject(new DeadlineExceededError(`no answer within ${ms} ms`));
    const timer = setTimeout(() => setImmediate(expire), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
