/** Raised when a decision is not back within the `timeout` option. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/**
 * Settles with `work`, or rejects once `ms` have passed: the limiter's own deadline,
 * whatever retry or offline-queue settings the Redis client was given.
 */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceededError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
