/**
 * The app measured by hot-path.ts, on the adapter HOT_PATH_ADAPTER names (express or
 * fastify), guarded as HOT_PATH_VARIANT says:
 * - `none`: no limiter at all (the baseline);
 * - `bare`: a hand-written global guard doing the library's job the shortest way: one call
 *   per request of the minimal script of the library's algorithm (test/support/minimal-scripts.ts:
 *   same clock, state, expiry and reply fields) on a key of the same shape, through an
 *   ioredis client with the library's options, the same RateLimit headers, and a 429 with
 *   Retry-After and the same body: the floor any Redis-backed guard of these semantics pays;
 * - `redis`: RateLimitModule on the Redis at REDIS_URL;
 * - `memory`: RateLimitModule on the embedded store;
 * - `metrics`: as `redis`, with the `metrics` option on, read by OpenTelemetry's Prometheus
 *   exporter (never scraped: what recording costs each request).
 * Every variant keys clients by the `x-client` header. Two routes: `/ping` with a budget
 * no benchmark exhausts (every request decided and admitted), and `/hot` with a limit of
 * one (after the first, every request of a client is denied).
 * Once listening it has one full GC while idle (see settleLikeALongRunningProcess), unless
 * HOT_PATH_SETTLE=0, and then prints `listening <port>`.
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
import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { MINIMAL_SCRIPTS } from './minimal-scripts.js';

type Variant = 'none' | 'bare' | 'redis' | 'memory' | 'metrics';
const variant = (process.env.HOT_PATH_VARIANT ?? 'none') as Variant;
const adapter = process.env.HOT_PATH_ADAPTER === 'fastify' ? 'fastify' : 'express';

const HOT_LIMIT = 1;
const ROOMY_LIMIT = 1_000_000_000;
/** The library's default algorithm, on both routes, for every variant that limits. */
const ALGORITHM = 'sliding-window-counter';
const WINDOW_MS = 3_600_000;

@Controller()
class PingController {
  @Get('ping')
  @RateLimit({ limit: ROOMY_LIMIT, window: '1h', algorithm: ALGORITHM })
  ping() {
    return { pong: true };
  }

  @Get('hot')
  @RateLimit({ limit: HOT_LIMIT, window: '1h', algorithm: ALGORITHM })
  hot() {
    return { pong: true };
  }
}

const clientOf = (context: ExecutionContext): string =>
  String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-client'],
  );

@Injectable()
class BareScriptGuard implements CanActivate {
  private readonly redis = new Redis(process.env.REDIS_URL!, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
  });
  constructor() {
    this.redis.defineCommand('bareLimit', { lua: MINIMAL_SCRIPTS[ALGORITHM], numberOfKeys: 1 });
  }
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const hot = context.getHandler() === PingController.prototype.hot;
    const limit = hot ? HOT_LIMIT : ROOMY_LIMIT;
    const route = hot ? 'PingController.hot' : 'PingController.ping';
    const [allowed, remaining, resetMs, retryMs] = await (
      this.redis as unknown as {
        bareLimit(...args: (string | number)[]): Promise<(number | string)[]>;
      }
    ).bareLimit(`rl:{${clientOf(context)}}:default:swc2:${route}`, limit, WINDOW_MS, limit, 1);
    const response = context.switchToHttp().getResponse<{
      header?(name: string, value: string): void;
      setHeader?(name: string, value: string): void;
    }>();
    const setHeader = (name: string, value: string) =>
      response.header ? response.header(name, value) : response.setHeader!(name, value);
    setHeader('RateLimit-Policy', `"default";q=${limit};w=${WINDOW_MS / 1000}`);
    setHeader('RateLimit', `"default";r=${remaining};t=${Math.ceil(Number(resetMs) / 1000)}`);
    if (allowed === 1) return true;
    const retryAfter = Math.max(1, Math.ceil(Number(retryMs) / 1000));
    setHeader('Retry-After', String(retryAfter));
    throw new HttpException(
      {
        statusCode: 429,
        error: 'Too Many Requests',
        message: `Rate limit exceeded ("default"); retry in ${retryAfter} s.`,
        retryAfter,
      },
      HttpStatus.TOO_MANY_REQUESTS,
    );
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
if (process.env.HOT_PATH_SETTLE !== '0') await settleLikeALongRunningProcess();
const address = app.getHttpServer().address() as { port: number };
console.log(`listening ${address.port}`);

/**
 * One full GC while idle, as every long-running process has had (V8 runs them when a process
 * goes quiet), so that variants are measured in the same V8 state rather than in whichever
 * one their startup drew. On Node 20, a full GC that finds no `process.nextTick` pending
 * frees the map of Node's tick objects; the one made next no longer matches what
 * `nextTick`'s object literal had recorded, and from then on its optimized code defines the
 * literal's two symbol keys through V8's runtime, on every tick, for the life of the
 * process. Whether startup had such a GC followed how much it allocated (the OpenTelemetry
 * SDK of the `metrics` variant tipped it), so without this step a variant's figure followed
 * its startup rather than its requests.
 */
async function settleLikeALongRunningProcess(): Promise<void> {
  const { gc } = globalThis as { gc?: () => void };
  if (!gc) throw new Error('hot-path-app: start it with node --expose-gc');
  // From a timer, once the tick queue has drained: no tick object is alive.
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc();
}
