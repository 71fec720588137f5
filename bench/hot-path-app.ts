/**
 * The app measured by hot-path.ts: one GET route, guarded as HOT_PATH_VARIANT says.
 * - `none`: no limiter at all (the baseline);
 * - `bare`: a minimal global guard sending one tiny script (INCR + PEXPIRE) per request
 *   through an auto-pipelined ioredis: the floor any Redis-backed guard pays;
 * - `redis`: RateLimitModule on the Redis at REDIS_URL;
 * - `memory`: RateLimitModule on the embedded store.
 * Prints `listening <port>` when ready.
 */
import 'reflect-metadata';
import {
  type CanActivate,
  Controller,
  Get,
  Injectable,
  Module,
  type ModuleMetadata,
} from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { RateLimit, RateLimitModule } from '../lib/index.js';

type Variant = 'none' | 'bare' | 'redis' | 'memory';
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

const BARE_SCRIPT = `local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 3600000) return n`;

@Injectable()
class BareScriptGuard implements CanActivate {
  private readonly redis = new Redis(process.env.REDIS_URL!, { enableAutoPipelining: true });
  constructor() {
    this.redis.defineCommand('bareLimit', { lua: BARE_SCRIPT, numberOfKeys: 1 });
  }
  async canActivate(): Promise<boolean> {
    const count = await (
      this.redis as unknown as { bareLimit(key: string): Promise<number> }
    ).bareLimit('bare:{127.0.0.1}');
    return count <= 1_000_000_000;
  }
}

const setups: Record<Variant, ModuleMetadata> = {
  none: { imports: [], providers: [] },
  bare: { imports: [], providers: [{ provide: APP_GUARD, useClass: BareScriptGuard }] },
  redis: { imports: [RateLimitModule.forRoot({ redis: process.env.REDIS_URL })], providers: [] },
  memory: { imports: [RateLimitModule.forRoot({})], providers: [] },
};

@Module({ ...setups[variant], controllers: [PingController] })
class HotPathModule {}

const app = await NestFactory.create(HotPathModule, { logger: false });
await app.listen(0, '127.0.0.1');
const address = app.getHttpServer().address() as { port: number };
console.log(`listening ${address.port}`);
