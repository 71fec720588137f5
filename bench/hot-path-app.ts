/**
 * The app measured by hot-path.ts: one GET route, guarded as HOT_PATH_VARIANT says.
 * - `none`: no limiter at all (the baseline);
 * - `redis`: RateLimitModule on the Redis at REDIS_URL;
 * - `memory`: RateLimitModule on the embedded store.
 * Prints `listening <port>` when ready.
 */
import 'reflect-metadata';
import { Controller, Get, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RateLimit, RateLimitModule } from '../lib/index.js';

type Variant = 'none' | 'redis' | 'memory';
const variant = (process.env.HOT_PATH_VARIANT ?? 'none') as Variant;

@Controller()
class PingController {
  @Get('ping')
  // A budget no benchmark exhausts: every request runs the whole decision and is admitted.
  @RateLimit({ limit: 1_000_000_000, window: '1h' })
  ping() {
    return { pong: true };
  }
}

const limiter: DynamicModule[] =
  variant === 'none'
    ? []
    : [RateLimitModule.forRoot({ redis: variant === 'redis' ? process.env.REDIS_URL : undefined })];

@Module({ imports: limiter, controllers: [PingController] })
class HotPathModule {}

const app = await NestFactory.create(HotPathModule, { logger: false });
await app.listen(0, '127.0.0.1');
const address = app.getHttpServer().address() as { port: number };
console.log(`listening ${address.port}`);
