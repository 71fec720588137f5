import { RateLimitConfigError } from '../config/rate-limit-config.error.js';
import type { ClockOption } from '../interfaces/rate-limit-options.interface.js';
import type {
  RedisClientLike,
  RedisConnectionOptions,
} from '../interfaces/redis-client.interface.js';

/**
 * What `new RedisThrottlerStorage(redis)` takes: whatever RateLimitModule's `redis` option
 * takes. Undefined (an unset REDIS_URL) is @nestjs/throttler's in-memory storage, as the
 * module's embedded store.
 */
export type ThrottlerRedisOption = string | RedisConnectionOptions | RedisClientLike;

/** The second argument of `new RedisThrottlerStorage(redis, options)`. */
export interface RedisThrottlerStorageOptions {
  /** First part of every Redis key (1-32 bytes, no braces or spaces). Default `'rl'`. */
  prefix?: string;
  /** Deadline of one `increment` in ms, whatever the client's own retries. Default 100. */
  timeout?: number;
  /**
   * Redis unreachable, erroring or late: `'open'` (default) answers as if the request were
   * admitted, `'closed'` throws RateLimitUnavailableException (503).
   */
  failureMode?: 'open' | 'closed';
  /**
   * Where time comes from: Redis `TIME` (default), `Date.now()` (`'local'`), or a function
   * returning epoch ms (virtual clocks, as RateLimitModule's `clock`).
   */
  clock?: ClockOption;
}

/** The options as the storage uses them. */
export interface ResolvedThrottlerStorageOptions {
  readonly prefix: string;
  readonly timeout: number;
  /** The most one increment waits while Redis answers others (RateLimitModule's default maxWait). */
  readonly maxWait: number;
  readonly failureMode: 'open' | 'closed';
  readonly clock: ClockOption;
}

/** Keys stay under 256 bytes: prefix 32 + tag 66 + ':throttler:' 11 + name 66. */
const PREFIX = /^[^{}\s]{1,32}$/;

/** Checks the constructor's arguments, at start: RateLimitConfigError for any that cannot work. */
export function resolveThrottlerStorageOptions(
  redis: unknown,
  options: RedisThrottlerStorageOptions = {},
): ResolvedThrottlerStorageOptions {
  const fail = (field: string, problem: string) =>
    new RateLimitConfigError(`Invalid RedisThrottlerStorage option ${field}: ${problem}`);
  const shown = (value: unknown) =>
    typeof value === 'function' ? 'a function' : JSON.stringify(value);
  if (typeof redis === 'string' && redis.trim() === '') {
    throw fail(
      'redis',
      'is an empty string (is REDIS_URL set but empty?): give a URL such as redis://host:6379, ' +
        "or leave it undefined for @nestjs/throttler's in-memory storage (limits per process)",
    );
  }
  if (redis !== undefined && typeof redis !== 'string' && (typeof redis !== 'object' || !redis)) {
    throw fail(
      'redis',
      `must be a URL such as redis://host:6379, ioredis options or a client (got ${shown(redis)})`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw fail('options', 'must be { prefix?, timeout?, failureMode?, clock? }');
  }
  const { prefix = 'rl', timeout = 100, failureMode = 'open', clock = 'redis' } = options;
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || Buffer.byteLength(prefix) > 32) {
    throw fail('prefix', `must be 1-32 bytes without braces or spaces (got ${shown(prefix)})`);
  }
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
    throw fail('timeout', `must be a positive number of ms (got ${shown(timeout)})`);
  }
  if (failureMode !== 'open' && failureMode !== 'closed') {
    throw fail('failureMode', `must be 'open' or 'closed' (got ${shown(failureMode)})`);
  }
  if (clock !== 'redis' && clock !== 'local' && typeof clock !== 'function') {
    throw fail(
      'clock',
      `must be 'redis', 'local' or a function returning epoch ms (got ${shown(clock)})`,
    );
  }
  if (redis === undefined && typeof clock === 'function') {
    throw fail(
      'clock',
      "a function needs Redis: without redis, @nestjs/throttler's in-memory storage counts on Date.now()",
    );
  }
  return { prefix, timeout, maxWait: Math.max(2_000, timeout), failureMode, clock };
}
