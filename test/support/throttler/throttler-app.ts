/**
 * An app as @nestjs/throttler's documentation writes one (docs.nestjs.com/security/rate-limiting:
 * named throttlers short, medium and long, ThrottlerGuard as APP_GUARD, @Throttle overrides,
 * @SkipThrottle, blockDuration), with its storage swapped for RedisThrottlerStorage: step 0 of
 * docs/migrating-from-throttler.md. Run built, as a process of its own (throttler-process.ts);
 * REDIS_URL, FAILURE_MODE ('open' | 'closed'); prints `listening on <url>`. Clients are told
 * apart by an `x-client` header (throttler's getTracker), so each test is a client of its own.
 */
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { RateLimitExceptionFilter } from '../../../lib/index.js';
import { RedisThrottlerStorage } from '../../../lib/throttler/index.js';

export const THROTTLERS = [
  { name: 'short', ttl: 1_000, limit: 3 },
  { name: 'medium', ttl: 10_000, limit: 20 },
  { name: 'long', ttl: 60_000, limit: 100 },
];

/** The block route's throttler: 2 a minute, then blocked for 1.5 s. */
export const BLOCK = { limit: 2, ttl: 60_000, blockDuration: 1_500 };

@Controller()
class ExamplesController {
  /** Every throttler as configured. */
  @Get('users')
  users() {
    return 'users';
  }

  @Throttle({ short: { limit: 5, ttl: 60_000 } })
  @Get('override')
  override() {
    return 'override';
  }

  @Throttle({ short: BLOCK })
  @Get('block')
  block() {
    return 'block';
  }
}

@SkipThrottle({ short: true, medium: true, long: true })
@Controller('skipped')
class SkippedController {
  @Get()
  all() {
    return 'not limited';
  }

  /** Only the medium throttler: 20 in 10 s. */
  @SkipThrottle({ medium: false })
  @Get('medium')
  medium() {
    return 'medium';
  }
}

const failureMode = process.env.FAILURE_MODE === 'closed' ? 'closed' : 'open';

@Module({
  imports: [
    ThrottlerModule.forRoot({
      throttlers: THROTTLERS,
      storage: new RedisThrottlerStorage(process.env.REDIS_URL, { failureMode }),
      getTracker: (req: Record<string, { 'x-client'?: string }>) =>
        req.headers['x-client'] ?? 'anonymous',
    }),
  ],
  controllers: [ExamplesController, SkippedController],
  providers: [
    { provide: APP_GUARD, useClass: ThrottlerGuard },
    // Sends Retry-After with the 503 of failureMode 'closed'.
    { provide: APP_FILTER, useClass: RateLimitExceptionFilter },
  ],
})
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
console.log(`listening on ${(await app.getUrl()).replace('[::1]', '127.0.0.1')}`);
