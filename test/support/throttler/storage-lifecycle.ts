/**
 * RedisThrottlerStorage as step 0 of docs/migrating-from-throttler.md writes it,
 * `new RedisThrottlerStorage(process.env.REDIS_URL, ...)`, in apps as throttler's docs
 * write them: with REDIS_URL unset, empty and set, and one storage serving a second app after
 * the first closed. Run built, as a process of its own (throttler-process.ts), with
 * TEST_REDIS_URL; prints what each scenario saw as one JSON line.
 */
import 'reflect-metadata';
import { Controller, Get, type LoggerService, Module, type Type } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { RedisThrottlerStorage } from '../../../lib/throttler/index.js';

@Controller()
class HelloController {
  @Get()
  hello() {
    return 'hello';
  }
}

/** An app limiting every route to 2 a minute per `x-client`, on `storage`. */
function appModule(storage: RedisThrottlerStorage): Type {
  @Module({
    imports: [
      ThrottlerModule.forRoot({
        throttlers: [{ ttl: 60_000, limit: 2 }],
        storage,
        getTracker: (req: Record<string, { 'x-client'?: string }>) =>
          req.headers['x-client'] ?? 'anonymous',
      }),
    ],
    controllers: [HelloController],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class AppModule {}
  return AppModule;
}

class WarningLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(message: unknown): void {
    this.warnings.push(`error: ${String(message)}`);
  }
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

/** Starts an app on `storage`, sends `requests` ([client, count]), closes it; the statuses. */
async function run(
  storage: RedisThrottlerStorage,
  requests: [string, number][],
  logger = new WarningLogger(),
): Promise<number[]> {
  const app = await NestFactory.create(appModule(storage), { logger });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const statuses: number[] = [];
  try {
    for (const [client, count] of requests) {
      for (let i = 0; i < count; i++) {
        statuses.push((await fetch(url, { headers: { 'x-client': client } })).status);
      }
    }
  } finally {
    await app.close();
  }
  return statuses;
}

const errorOf = (construct: () => unknown) => {
  try {
    construct();
    return 'constructed';
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
};

const redisUrl = process.env.TEST_REDIS_URL!;

delete process.env.REDIS_URL;
const unsetLogger = new WarningLogger();
const unset = await run(
  new RedisThrottlerStorage(process.env.REDIS_URL),
  [
    ['alice', 3],
    ['bob', 1],
  ],
  unsetLogger,
);

process.env.REDIS_URL = '';
const empty = errorOf(() => new RedisThrottlerStorage(process.env.REDIS_URL));
const virtualClockWithoutRedis = errorOf(
  () => new RedisThrottlerStorage(undefined, { clock: () => 0 }),
);

process.env.REDIS_URL = redisUrl;
const set = await run(new RedisThrottlerStorage(process.env.REDIS_URL, { prefix: 'set' }), [
  ['carol', 3],
]);

const reusedOnRedis = new RedisThrottlerStorage(redisUrl, { prefix: 'reused' });
const reusedFirst = await run(reusedOnRedis, [['dave', 3]]);
const reusedSecond = await run(reusedOnRedis, [
  ['erin', 4],
  ['dave', 1],
]);

const reusedInMemory = new RedisThrottlerStorage();
const inMemoryFirst = await run(reusedInMemory, [['frank', 3]]);
const inMemorySecond = await run(reusedInMemory, [['frank', 3]]);

console.log(
  JSON.stringify({
    unset,
    unsetWarnings: unsetLogger.warnings,
    empty,
    virtualClockWithoutRedis,
    set,
    reusedFirst,
    reusedSecond,
    inMemoryFirst,
    inMemorySecond,
  }),
);
