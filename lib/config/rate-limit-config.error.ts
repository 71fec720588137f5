/** Thrown at application start for options or policies that cannot work. */
export class RateLimitConfigError extends Error {
  override readonly name = 'RateLimitConfigError';
}
