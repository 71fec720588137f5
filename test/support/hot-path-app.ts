/**
 * The app measured by hot-path.ts, on the adapter HOT_PATH_ADAPTER names (express or
 * fastify), both routes limited with the algorithm HOT_PATH_ALGORITHM names (default
 * fixed-window: the only one rate-limiter-flexible's RateLimiterRedis has, so the `flexible`
 * variant is compared like with like; the bare guard follows it too), guarded as
 * HOT_PATH_VARIANT says:
 * - `none`: no limiter at all (the baseline);
 * - `bare`: a hand-written global guard doing the library's job the shortest way: one call
 *   per request of the minimal script of the library's algorithm (test/support/minimal-scripts.ts:
 *   same clock, state, expiry and reply fields) on a key of the same shape, through an
 *   ioredis client with the library's options, the same RateLimit headers, and a 429 with
 *   Retry-After and the same body: the floor any Redis-backed guard of these semantics pays;
 * - `flexible`: a global guard as bare, calling rate-limiter-flexible's
 *   `RateLimiterRedis.consume(key)` (one limiter per route, on an ioredis client with the
 *   bare guard's options), a plain 429 when it rejects with a RateLimiterRes, no headers, no
 *   deadline: the peer the library is measured against (a fixed window counting from a key's
 *   first request, whatever HOT_PATH_ALGORITHM says);
 * - `redis`: RateLimitModule on the Redis at REDIS_URL;
 * - `quiet`: as `redis`, with `headers: 'none'`: what the headers cost, and the library as
 *   bare as `flexible`;
 * - `memory`: RateLimitModule on the embedded store;
 * - `metrics`: as `redis`, with the `metrics` option on, read by OpenTelemetry's Prometheus
 *   exporter (never scraped: what recording costs each request).
 * Every variant keys clients by the `x-client` header. Two routes: `/ping` with a budget
 * no benchmark exhausts (every request decided and admitted), leased when HOT_PATH_LEASE
 * gives a lease size (bench/leases.ts), and `/hot` with a limit of one (after the first,
 * every request of a client is denied).
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
import { Redis, type RedisOptions } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { type Algorithm, RateLimit, RateLimitModule } from '../../lib/index.js';
import { MINIMAL_SCRIPTS } from './minimal-scripts.js';

type Variant = 'none' | 'bare' | 'flexible' | 'redis' | 'quiet' | 'memory' | 'metrics';
const variant = (process.env.HOT_PATH_VARIANT ?? 'none') as Variant;
const adapter = process.env.HOT_PATH_ADAPTER === 'fastify' ? 'fastify' : 'express';

const HOT_LIMIT = 1;
const ROOMY_LIMIT = 1_000_000_000;
/** On both routes, for the library's variants and the bare guard. */
const ALGORITHM = (process.env.HOT_PATH_ALGORITHM ?? 'fixed-window') as Algorithm;
if (ALGORITHM !== 'fixed-window' && ALGORITHM !== 'sliding-window-counter') {
  throw new Error(`HOT_PATH_ALGORITHM: fixed-window or sliding-window-counter, not ${ALGORITHM}`);
}
/** The `/ping` policy's lease; unset: none. */
const LEASE = process.env.HOT_PATH_LEASE ? Number(process.env.HOT_PATH_LEASE) : undefined;
/** In the library's keys (lib/config/resolved-policy.ts), which the bare guard's copy. */
const ALGORITHM_CODE = ALGORITHM === 'fixed-window' ? 'fw3' : 'swc2';
const WINDOW_MS = 3_600_000;
/** The library's ioredis options, for the bare and flexible guards' clients. */
const CLIENT_OPTIONS: RedisOptions = {
  enableAutoPipelining: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
};

@Controller()
class PingController {
  @Get('ping')
  @RateLimit({ limit: ROOMY_LIMIT, window: '1h', algorithm: ALGORITHM, lease: LEASE })
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
  private readonly redis = new Redis(process.env.REDIS_URL!, CLIENT_OPTIONS);
  constructor() {
    this.redis.defineCommand('bareLimit', { lua: MINIMAL_SCRIPTS[ALGORITHM], numberOfKeys: 1 });
  }
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const hot = context.getHandler() === PingController.prototype.hot;
    const limit = hot ? HOT_LIMIT : ROOMY_LIMIT;
    const route = hot ? 'PingController.hot' : 'PingController.ping';
    const reply = await (
      this.redis as unknown as {
        bareLimit(...args: (string | number)[]): Promise<(number | string)[] | number>;
      }
    ).bareLimit(
      `rl:{${clientOf(context)}}:default:${ALGORITHM_CODE}:${route}`,
      limit,
      WINDOW_MS,
      limit,
      1,
    );
    // A fixed window's first charge answers with its reset alone (minimal-scripts.ts).
    const [allowed, remaining, resetMs, retryMs] =
      typeof reply === 'number' ? [1, limit - 1, reply, 0] : reply;
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

@Injectable()
class FlexibleGuard implements CanActivate {
  private readonly redis = new Redis(process.env.REDIS_URL!, CLIENT_OPTIONS);
  private readonly limiters = {
    hot: new RateLimiterRedis({
      storeClient: this.redis,
      points: HOT_LIMIT,
      duration: WINDOW_MS / 1000,
      keyPrefix: 'rlf:hot',
    }),
    ping: new RateLimiterRedis({
      storeClient: this.redis,
      points: ROOMY_LIMIT,
      duration: WINDOW_MS / 1000,
      keyPrefix: 'rlf:ping',
    }),
  };
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const hot = context.getHandler() === PingController.prototype.hot;
    try {
      await (hot ? this.limiters.hot : this.limiters.ping).consume(clientOf(context));
      return true;
    } catch (rejection) {
      // Anything else (Redis failing) is an error: a 500, which the bench counts as one.
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw new HttpException('Too Many Requests', HttpStatus.TOO_MANY_REQUESTS);
    }
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
const limited = (redis: string | undefined, headers?: 'none') =>
  RateLimitModule.forRoot({
    redis,
    keyBy: clientOf,
    headers,
    metrics: meterProvider && { meterProvider },
  });
const setups: Record<Variant, ModuleMetadata> = {
  none: { imports: [], providers: [] },
  bare: { imports: [], providers: [{ provide: APP_GUARD, useClass: BareScriptGuard }] },
  flexible: { imports: [], providers: [{ provide: APP_GUARD, useClass: FlexibleGuard }] },
  redis: { imports: [limited(process.env.REDIS_URL)], providers: [] },
  quiet: { imports: [limited(process.env.REDIS_URL, 'none')], providers: [] },
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
