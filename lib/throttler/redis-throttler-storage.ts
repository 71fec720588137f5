import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { RateLimitConfigError } from '../config/rate-limit-config.error.js';
import { RateLimitUnavailableException, retryAfterSeconds } from '../rate-limit.exceptions.js';
import { SilenceDetector } from '../resilience/deadline.js';
import { OutageLog } from '../resilience/outage-log.js';
import { awaitReady, createRedisClient } from '../stores/redis/redis-connection.js';
import { clientPortOf, isRedisClient } from '../stores/redis/clients/client-port.js';
import type { RedisClientPort } from '../stores/redis/clients/redis-client-port.js';
import {
  type RedisThrottlerStorageOptions,
  type ResolvedThrottlerStorageOptions,
  resolveThrottlerStorageOptions,
  type ThrottlerRedisOption,
} from './redis-throttler-storage-options.js';
import { type IncrementReply, sendIncrement } from './throttler-script.js';
import { throttlerKeys } from './throttler-keys.js';

const logger = new Logger('RedisThrottlerStorage');

/**
 * Past this many ms (about 31,000 years) a ttl or block no longer fits the script's
 * arithmetic and Redis's expiries exactly.
 */
const MAX_MS = 1e15;

/** What is wrong with an increment's numbers, if anything (a limit may be Infinity). */
function badArgument(ttl: unknown, limit: unknown, blockDuration: unknown): string | undefined {
  if (typeof limit !== 'number' || Number.isNaN(limit)) {
    return `limit must be a number (got ${String(limit)})`;
  }
  for (const [field, value] of [
    ['ttl', ttl],
    ['blockDuration', blockDuration],
  ] as const) {
    if (typeof value !== 'number' || !(Math.abs(value) <= MAX_MS)) {
      return `${field} must be a number of ms within ±${MAX_MS} (got ${String(value)})`;
    }
  }
  return undefined;
}

/** What an increment answers (throttler's ThrottlerStorageRecord, which its index does not export). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * With a virtual clock, a key's need (in virtual ms) says nothing about real time, in which
 * Redis expires keys; such keys live at least this long (as RateLimitModule's do).
 */
const VIRTUAL_CLOCK_TTL_FLOOR_MS = 60_000;

/**
 * `@nestjs/throttler`'s storage on Redis: `ThrottlerModule.forRoot({ throttlers, storage: new
 * RedisThrottlerStorage(redis, options) })`. Each increment is one atomic script
 * (lua/throttler-increment.lua) with the semantics of throttler's own in-memory storage, so
 * every instance of an app shares one count per key; under this package's deadline and
 * failure mode when Redis is away. With `redis` undefined (an unset REDIS_URL), it is
 * throttler's in-memory storage itself, with a warning at start that limits are per process,
 * as RateLimitModule's embedded store.
 *
 * Nest calls onModuleInit (connects, and fails the start if a URL or options are given
 * without ioredis installed) and onApplicationShutdown (closes a client the storage created,
 * never one the app passed in; a later app using the storage connects again); used outside
 * Nest, call them yourself.
 */
export class RedisThrottlerStorage
  implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown
{
  private readonly options: ResolvedThrottlerStorageOptions;
  /** Whether the storage made the client (from a URL or options), and so closes it. */
  private readonly owned: boolean;
  private client: Promise<RedisClientPort> | undefined;
  /** Without redis: @nestjs/throttler's own in-memory storage, loaded at first need. */
  private memory: Promise<ThrottlerStorage & OnApplicationShutdown> | undefined;
  private readonly silence = new SilenceDetector();
  private readonly outage: OutageLog;
  private readonly ttlFloor: string;

  constructor(
    private readonly redis?: ThrottlerRedisOption,
    options?: RedisThrottlerStorageOptions,
  ) {
    this.options = resolveThrottlerStorageOptions(redis, options);
    this.owned = !isRedisClient(redis);
    this.ttlFloor =
      typeof this.options.clock === 'function' ? `${VIRTUAL_CLOCK_TTL_FLOOR_MS}` : '0';
    this.outage = new OutageLog(
      logger,
      `failureMode '${this.options.failureMode}' applies until it answers`,
    );
  }

  async onModuleInit(): Promise<void> {
    if (this.redis === undefined) {
      await this.inMemory();
      logger.warn(
        "No redis given: using @nestjs/throttler's in-memory storage, so limits are per " +
          'process. Behind a load balancer with N instances a client gets N times the limit; ' +
          'give a Redis URL (is REDIS_URL unset?).',
      );
      return;
    }
    const client = await this.connection();
    // A client the app owns: waits briefly for it, and warns if it is not reachable yet.
    if (!this.owned) await awaitReady(client, logger);
    logger.log(`Throttling on ${client.describe()}`);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.memory) (await this.memory).onApplicationShutdown();
    if (!this.owned || !this.client) return;
    const closing = this.client;
    // Forgotten, not kept closed: an app that uses this storage later connects again.
    this.client = undefined;
    const client = await closing.catch(() => undefined);
    await client?.close();
  }

  /**
   * One hit of `key` for the throttler `throttlerName`: counted in a window of `ttl` ms (each
   * hit for `ttl` ms, the window from the first), and past `limit` blocked for
   * `blockDuration` ms (none when 0), as throttler's in-memory storage does.
   */
  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const startedAt = performance.now();
    const problem = badArgument(ttl, limit, blockDuration);
    if (problem)
      return Promise.reject(new TypeError(`RedisThrottlerStorage.increment: ${problem}`));
    if (this.redis === undefined) {
      return this.inMemory().then((memory) =>
        memory.increment(key, ttl, limit, blockDuration, throttlerName),
      );
    }
    const { clock, prefix, timeout, maxWait } = this.options;
    const now = clock === 'redis' ? '' : String(clock === 'local' ? Date.now() : clock());
    const { record, hits, name } = throttlerKeys(prefix, key, throttlerName);
    const args = [now, String(ttl), String(limit), String(blockDuration), name, this.ttlFloor];
    return this.silence.withDeadline(
      this.connection().then((client) => sendIncrement(client, [record, hits], args)),
      { wantedFor: timeout, timeout, maxWait },
      startedAt,
      (reply) => this.answered(reply),
      (error) => this.failed(error, ttl),
    );
  }

  /**
   * @nestjs/throttler's ThrottlerStorageService, loaded only here: this entry loads without
   * @nestjs/throttler installed (which an app constructing the storage has anyway).
   */
  private inMemory(): Promise<ThrottlerStorage & OnApplicationShutdown> {
    this.memory ??= import('@nestjs/throttler').then(
      ({ ThrottlerStorageService }) => new ThrottlerStorageService(),
    );
    return this.memory;
  }

  /** The client: the app's own, or made from the URL or options once, at first need. */
  private connection(): Promise<RedisClientPort> {
    if (this.client) return this.client;
    const redis = this.redis!;
    if (isRedisClient(redis)) {
      const port = clientPortOf(redis);
      // A lazyConnect client would otherwise never connect: nothing is sent to it until ready.
      port.connectIfLazy();
      this.client = Promise.resolve(port);
    } else {
      this.client = createRedisClient(redis, logger).then(clientPortOf);
    }
    return this.client;
  }

  private answered([totalHits, timeToExpire, isBlocked, timeToBlockExpire]: IncrementReply) {
    this.outage.answered();
    return { totalHits, timeToExpire, isBlocked: isBlocked === 1, timeToBlockExpire };
  }

  /** Redis failed, erred or stayed silent past the deadline: the failure mode answers. */
  private failed(error: unknown, ttl: number): ThrottlerStorageRecord {
    // ioredis missing: a mistake to fix, not an outage to ride out.
    if (error instanceof RateLimitConfigError) throw error;
    this.outage.failed(error);
    if (this.options.failureMode === 'closed') {
      // The cause is logged above; the client's answer names none of it.
      throw new RateLimitUnavailableException(
        undefined,
        retryAfterSeconds(this.options.timeout),
        error,
      );
    }
    return {
      totalHits: 0,
      timeToExpire: Math.ceil(ttl / 1000),
      isBlocked: false,
      timeToBlockExpire: 0,
    };
  }
}
