/**
 * The app measured by hot-path.ts, on the adapter HOT_PATH_ADAPTER names (express or
 * fastify), guarded as HOT_PATH_VARIANT says:
 * - `none`: no limiter at all (the baseline);
 * - `bare`: a minimal global guard sending one tiny script (INCR + PEXPIRE) per request
 *   through an auto-pipelined ioredis: the floor any Redis-backed guard pays;
 * - `redis`: RateLimitModule on the Redis at REDIS_URL;
 * - `memory`: RateLimitModule on the embedded store;
 * - `metrics`: as `redis`, with the `metrics` option on, read by OpenTelemetry's Prometheus
 *   exporter (never scraped: what recording costs each request).
 * Every variant keys clients by the `x-client` header. Two routes: `/ping` with a budget
 * no benchmark exhausts (every request decided and admitted), and `/hot` with a limit of
 * one (after the first, every request of a client is denied).
 * Prints `listening <port>` when ready.
 */
import 'reflect-metadata';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  HttpStatus,
  Injectable,
  Module,
  type ModuleMetadata,
} from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import { RateLimit, RateLimitModule } from '../lib/index.js';

type Variant = 'none' | 'bare' | 'redis' | 'memory' | 'metrics';
const variant = (process.env.HOT_PATH_VARIANT ?? 'none') as Variant;
const adapter = process.env.HOT_PATH_ADAPTER === 'fastify' ? 'fastify' : 'express';

const HOT_LIMIT = 1;
const ROOMY_LIMIT = 1_000_000_000;

@Controller()
class PingController {
  @Get('ping')
  @RateLimit({ limit: ROOMY_LIMIT, window: '1h' })
  ping() {
    return { pong: true };
  }

  @Get('hot')
  @RateLimit({ limit: HOT_LIMIT, window: '1h' })
  hot() {
    return { pong: true };
  }
}

const clientOf = (context: ExecutionContext): string =>
  String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-client'],
  );

const BARE_SCRIPT = `local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 3600000) return n`;

@Injectable()
class BareScriptGuard implements CanActivate {
  private readonly redis = new Redis(process.env.REDIS_URL!, { enableAutoPipelining: true });
  constructor() {
    this.redis.defineCommand('bareLimit', { lua: BARE_SCRIPT, numberOfKeys: 1 });
  }
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const hot = context.getHandler() === PingController.prototype.hot;
    const count = await (
      this.redis as unknown as { bareLimit(key: string): Promise<number> }
    ).bareLimit(`bare:{${clientOf(context)}}:${hot ? 'hot' : 'ping'}`);
    if (count > (hot ? HOT_LIMIT : ROOMY_LIMIT)) {
      throw new HttpException('Too Many Requests', HttpStatus.TOO_MANY_REQUESTS);
    }
    return true;
  }
}

const meterProvider =
  variant === 'metrics'
    ? await (async () => {
        const { MeterProvider } = await import('@opentelemetry/sdk-metrics');
        const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
        return new MeterProvider({
          readers: [new PrometheusExporter({ preventServerStart: true })],
        });
      })()
    : undefined;
const limited = (redis: string | undefined) =>
  RateLimitModule.forRoot({ redis, keyBy: clientOf, metrics: meterProvider && { meterProvider } });
const setups: Record<Variant, ModuleMetadata> = {
  none: { imports: [], providers: [] },
  bare: { imports: [], providers: [{ provide: APP_GUARD, useClass: BareScriptGuard }] },
  redis: { imports: [limited(process.env.REDIS_URL)], providers: [] },
  memory: { imports: [limited(undefined)], providers: [] },
  metrics: { imports: [limited(process.env.REDIS_URL)], providers: [] },
};

@Module({ ...setups[variant], controllers: [PingController] })
class HotPathModule {}

const app =
  adapter === 'fastify'
    ? await NestFactory.create(HotPathModule, new FastifyAdapter(), { logger: false })
    : await NestFactory.create(HotPathModule, { logger: false });
await app.listen(0, '127.0.0.1');
const address = app.getHttpServer().address() as { port: number };
console.log(`listening ${address.port}`);
