import {
  Inject,
  Logger,
  Module,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { globalMeterProvider } from './config/metrics-option.js';
import { otherCopiesLoaded } from './package-copies.js';
import {
  GLOBAL_GUARD,
  RATE_LIMIT_CLOCK,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_REDIS,
  RATE_LIMIT_STORE,
} from './rate-limit.constants.js';
import { RateLimitExceptionFilter } from './rate-limit.filter.js';
import { RateLimitGuard } from './guard/rate-limit.guard.js';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './rate-limit.module-definition.js';
import type {
  ClockOption,
  RateLimitModuleOptions,
} from './interfaces/rate-limit-options.interface.js';
import { RateLimiter } from './limiter/rate-limiter.service.js';
import { RateLimitHealthIndicator } from './rate-limit-health.indicator.js';
import { RoutePlanner } from './guard/route-planner.js';
import { documentRateLimitResponses } from './guard/openapi-responses.js';
import { awaitReady, createRedisClient } from './stores/redis/redis-connection.js';
import { clientPortOf, isRedisClient } from './stores/redis/clients/client-port.js';
import type { RedisClientLike } from './interfaces/redis-client.interface.js';
import { type ResolvedRateLimitOptions, resolveOptions } from './config/resolved-options.js';
import { MemoryStore } from './stores/memory/memory.store.js';
import type { RateLimitStore } from './interfaces/rate-limit-store.interface.js';
import { RedisStore } from './stores/redis/redis.store.js';

const logger = new Logger('RateLimit');

/** Made with the providers, before an app builds its OpenAPI document: see documentRateLimitResponses. */
const OPENAPI_RESPONSES = Symbol('RateLimit OpenAPI responses');

/** Lets every request through: the global guard slot when `guard: false`. */
const NO_GUARD = { canActivate: () => true };

/**
 * Global module: `RateLimitModule.forRoot(options)` or `forRootAsync({ useFactory, inject })`.
 * Registers RateLimitGuard globally (unless `guard: false`) and RateLimitExceptionFilter.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RATE_LIMIT_CLOCK,
      useFactory: (options: RateLimitModuleOptions | undefined): ClockOption =>
        options?.clock ?? 'redis',
      inject: [MODULE_OPTIONS_TOKEN],
    },
    {
      // The clock as the token gives it, so an overridden one is read everywhere `clock` is.
      provide: RATE_LIMIT_OPTIONS,
      useFactory: async (options: RateLimitModuleOptions | undefined, clock: ClockOption) =>
        resolveOptions({ ...options, clock }, await globalMeterProvider(options?.metrics)),
      inject: [MODULE_OPTIONS_TOKEN, RATE_LIMIT_CLOCK],
    },
    {
      provide: RATE_LIMIT_REDIS,
      useFactory: async ({
        redis,
        store,
      }: ResolvedRateLimitOptions): Promise<RedisClientLike | null> => {
        if (redis === undefined || store) return null;
        if (!isRedisClient(redis)) return createRedisClient(redis, logger);
        await awaitReady(clientPortOf(redis), logger);
        // As given: the app injects the client of its own library.
        return redis;
      },
      inject: [RATE_LIMIT_OPTIONS],
    },
    {
      provide: RATE_LIMIT_STORE,
      useFactory: (
        options: ResolvedRateLimitOptions,
        client: RedisClientLike | null,
      ): RateLimitStore => {
        if (options.store) return options.store;
        if (client) {
          logger.log(`Deciding on ${clientPortOf(client).describe()}`);
          return new RedisStore(client, !isRedisClient(options.redis));
        }
        logger.warn(
          'No redis option: using the embedded in-process store, so limits are per process. ' +
            'Behind a load balancer with N instances a client gets N times the limit; configure Redis.',
        );
        return new MemoryStore();
      },
      inject: [RATE_LIMIT_OPTIONS, RATE_LIMIT_REDIS],
    },
    RateLimiter,
    RoutePlanner,
    RateLimitGuard,
    RateLimitHealthIndicator,
    {
      provide: OPENAPI_RESPONSES,
      useFactory: async (options: ResolvedRateLimitOptions, planner: RoutePlanner) => {
        await documentRateLimitResponses(options, planner, logger);
        return true;
      },
      inject: [RATE_LIMIT_OPTIONS, RoutePlanner],
    },
    {
      // Through the RateLimitGuard token, so overrideProvider(RateLimitGuard) replaces it here too.
      provide: APP_GUARD,
      useFactory: (
        options: ResolvedRateLimitOptions,
        guard: RateLimitGuard,
        planner: RoutePlanner,
      ) => {
        // Replaced by a test (overrideProvider(RateLimitGuard).useValue(...)): the guards
        // that @UseGuards(RateLimitGuard) applies answer as the replacement does.
        if (!(guard instanceof RateLimitGuard)) planner.standIn = guard;
        if (!options.guard) return NO_GUARD;
        if (guard instanceof RateLimitGuard) guard[GLOBAL_GUARD] = true;
        return guard;
      },
      inject: [RATE_LIMIT_OPTIONS, RateLimitGuard, RoutePlanner],
    },
    { provide: APP_FILTER, useClass: RateLimitExceptionFilter },
  ],
  // RateLimiter and RoutePlanner: what @UseGuards(RateLimitGuard) or a subclass needs anywhere;
  // RateLimitHealthIndicator: for the app's terminus health checks.
  exports: [
    RATE_LIMIT_CLOCK,
    RATE_LIMIT_OPTIONS,
    RATE_LIMIT_REDIS,
    RATE_LIMIT_STORE,
    RateLimiter,
    RoutePlanner,
    RateLimitGuard,
    RateLimitHealthIndicator,
  ],
})
export class RateLimitModule
  extends ConfigurableModuleClass
  implements OnModuleInit, OnApplicationShutdown
{
  constructor(
    @Inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore,
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    private readonly planner: RoutePlanner,
    private readonly limiter: RateLimiter,
  ) {
    super();
    if (otherCopiesLoaded()) {
      logger.warn(
        'nestjs-redis-rate-limiter is loaded more than once in this process (imported and ' +
          'required, or two versions installed). Each copy has its own classes and injection ' +
          "tokens, so one copy's providers cannot inject the other's: load it one way.",
      );
    }
  }

  /**
   * A mistake in a route's policies stops the start. Nest then calls no shutdown hook, so the
   * connection this module opened is closed here: left open, it would keep the process alive.
   */
  async onModuleInit(): Promise<void> {
    try {
      this.planner.planAll();
      this.limiter.nameFailureModes(this.planner.failureModeRoutes());
      this.warnOfUnguardedRoutes();
    } catch (error) {
      await this.onApplicationShutdown();
      throw error;
    }
  }

  /**
   * `guard: false` leaves every route to the guards the app applies: one with policies but
   * no `@UseGuards(RateLimitGuard)` is not limited, unless a guard of the app's own (a
   * subclass registered as APP_GUARD, say) limits it. Said once, at start.
   */
  private warnOfUnguardedRoutes(): void {
    const routes = this.planner.unguardedRoutes();
    if (routes.length === 0) return;
    const named = routes.slice(0, 5).join(', ');
    const more = routes.length > 5 ? ` and ${routes.length - 5} more` : '';
    logger.warn(
      `guard: false, and ${routes.length} route${routes.length === 1 ? ' has' : 's have'} ` +
        `policies but no @UseGuards(RateLimitGuard): ${named}${more}. They are not limited ` +
        'unless a guard of your own applies RateLimitGuard to them.',
    );
  }

  async onApplicationShutdown(): Promise<void> {
    // A store handed in by the user is theirs to close.
    if (this.store !== this.options.store) await this.store.close();
  }
}
