import type { ExecutionContext } from '@nestjs/common';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { KeyResolver, RateLimitPolicy } from './rate-limit-policy.interface.js';
import type { RateLimitStore } from './stores/rate-limit-store.interface.js';

export type FailureMode = 'open' | 'closed';
export type HeaderStyle = 'ietf' | 'legacy' | 'both' | 'none';
/** `'redis'`: Redis `TIME`; `'local'`: `Date.now()`; a function: its epoch milliseconds. */
export type ClockOption = 'redis' | 'local' | (() => number);

/** Options of `RateLimitModule.forRoot` / `forRootAsync`. */
export interface RateLimitModuleOptions {
  /**
   * A URL or ioredis options (the module creates, connects and closes that client), or a
   * client you own (never closed by the module). Omitted: the embedded in-process store.
   */
  redis?: string | RedisOptions | Redis | Cluster;
  /**
   * A store of your own (Valkey functions, a Redis module, an instrumented wrapper): used
   * instead of `redis` and the embedded store, and never closed by the module. An extension
   * of the contract.
   */
  store?: RateLimitStore;
  /** First part of every Redis key; default `'rl'`. */
  prefix?: string;
  /** Applied to every route without its own `@RateLimit`; scope `'global'` by default. */
  policies?: RateLimitPolicy[];
  /** When the store is unreachable, erroring or late: `'open'` (default) admits, `'closed'` answers 503. */
  failureMode?: FailureMode;
  /** Deadline for one decision in ms; default 100. */
  timeout?: number;
  /** Response headers; default `'ietf'`. */
  headers?: HeaderStyle;
  /** Who is being limited; default the client IP. */
  keyBy?: KeyResolver;
  /** Returns true for requests that are not limited. */
  skip?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /** Decide, count, log and set headers, but never block. */
  dryRun?: boolean;
  /** Where time comes from; default `'redis'`. */
  clock?: ClockOption;
  /** Register `RateLimitGuard` as a global guard; default true. */
  guard?: boolean;
}
