/**
 * One pod: a Nest app whose GET /limited/<route> handlers are guarded as POD_CONFIG says.
 * The harness (pod-fleet.ts) starts several on one Redis and spreads a client's requests
 * over them. Prints `pod listening on <port>` once it accepts requests; exits when its
 * parent closes stdin, so no pod outlives the test or benchmark that started it.
 */
import 'reflect-metadata';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  type DynamicModule,
  type ExecutionContext,
  Get,
  type INestApplication,
  Module,
  Req,
  type Type,
  UnauthorizedException,
} from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { Cluster, Redis } from 'ioredis';
import * as iovalkey from 'iovalkey';
import {
  RATE_LIMIT_STORE,
  RateLimit,
  RateLimiter,
  RateLimitModule,
  type RateLimitStore,
} from '../../../lib/index.js';
import { stampDecisionTimes, stampLeasedDecisions, withResponseScope } from './decision-timing.js';
import { NaiveRedisGuard } from './naive-redis.guard.js';
import {
  CLIENT_KEY_HEADER,
  LOOP_DELAY_PATH,
  POD_CONFIG_ENV,
  type PodConfig,
  OUTCOME_HEADER,
  type PodRoutePolicy,
  REQUEST_LOG_PATH,
} from './pod-config.js';
import { requestLog } from './request-log.js';

/**
 * Unless the config says otherwise: generous, and with failureMode 'closed'. On a loaded
 * 2-core machine a decision can take far longer than the default 100 ms, and failing open
 * would count as leaks what are really timeouts. A late decision shows up as a 503
 * instead, which the harness reports.
 */
const DECISION_TIMEOUT_MS = 10_000;

function clientKey(context: ExecutionContext): string {
  const value = context.switchToHttp().getRequest<IncomingMessage>().headers[CLIENT_KEY_HEADER];
  return typeof value === 'string' ? value : 'anonymous';
}

type RoutePolicies = Map<unknown, PodRoutePolicy & { route: string }>;

/**
 * A controller with one handler per configured route, each with its own @RateLimit, built
 * at run time because the routes come from the environment. Each handler is a distinct,
 * named function, since the guard plans and keys routes by handler.
 */
function limitedController(routes: PodConfig['routes']): {
  controller: Type;
  policies: RoutePolicies;
} {
  @Controller('limited')
  class LimitedController {}
  const policies: RoutePolicies = new Map();
  for (const [route, policy] of Object.entries(routes)) {
    // A route that counts by outcome succeeds or fails as the request's header says.
    const handler = (request?: IncomingMessage): { route: string } => {
      if (policy.count && request?.headers[OUTCOME_HEADER] !== 'success') {
        throw new UnauthorizedException();
      }
      return { route };
    };
    Object.defineProperty(handler, 'name', { value: route });
    Object.defineProperty(LimitedController.prototype, route, { value: handler });
    const descriptor = Object.getOwnPropertyDescriptor(LimitedController.prototype, route)!;
    Get(route)(LimitedController.prototype, route, descriptor);
    if (policy.count) Req()(LimitedController.prototype, route, 0);
    RateLimit({
      name: 'pod',
      algorithm: policy.algorithm,
      limit: policy.limit,
      window: policy.windowMs,
      burst: policy.burst,
      lease: policy.lease,
      count: policy.count,
    })(LimitedController.prototype, route, descriptor);
    policies.set(handler, { ...policy, route });
  }
  return { controller: LimitedController, policies };
}

@Module({})
class PodModule {}

function podModule(config: PodConfig): DynamicModule {
  const { controller, policies } = limitedController(config.routes);
  if (config.variant === 'naive-redis') {
    const guard = new NaiveRedisGuard(
      new Redis(requireRedisUrl(config)),
      config.prefix,
      policies,
      clientKey,
    );
    return {
      module: PodModule,
      controllers: [controller],
      providers: [{ provide: APP_GUARD, useValue: guard }],
    };
  }
  const rateLimits = RateLimitModule.forRoot({
    redis: config.variant === 'library' ? libraryRedis(config) : undefined,
    prefix: config.prefix,
    clock: config.clock ?? 'redis',
    keyBy: clientKey,
    failureMode: config.failureMode ?? 'closed',
    timeout: config.decisionTimeoutMs ?? DECISION_TIMEOUT_MS,
    instances: config.instances,
  });
  return { module: PodModule, imports: [rateLimits], controllers: [controller] };
}

/**
 * A client the pod owns, given `redisCluster` or `clientLibrary`; else the URL, for the
 * module to connect.
 */
function libraryRedis(config: PodConfig): string | Redis | Cluster {
  const { redisCluster, clientLibrary } = config;
  if (!redisCluster && !clientLibrary) return requireRedisUrl(config);
  const library =
    clientLibrary === 'iovalkey'
      ? (iovalkey as unknown as { Redis: typeof Redis; Cluster: typeof Cluster })
      : { Redis, Cluster };
  const client = redisCluster
    ? new library.Cluster([...redisCluster.nodes], redisCluster.options)
    : new library.Redis(requireRedisUrl(config));
  // As an app would: a node going away must not crash the pod as an unhandled 'error'.
  client.on('error', () => undefined);
  return client;
}

function requireRedisUrl(config: PodConfig): string {
  if (!config.redisUrl) throw new Error(`Pod variant ${config.variant} needs redisUrl`);
  return config.redisUrl;
}

function readConfig(): PodConfig {
  const text = process.env[POD_CONFIG_ENV];
  if (!text) throw new Error(`${POD_CONFIG_ENV} is not set`);
  return JSON.parse(text) as PodConfig;
}

/** Busy-waits, as a synchronous CPU-bound handler holds the event loop. */
function blockEventLoop({ everyMs, forMs }: NonNullable<PodConfig['blockEventLoop']>): void {
  setInterval(() => {
    const until = performance.now() + forMs;
    while (performance.now() < until);
  }, everyMs).unref();
}

/**
 * GET LOOP_DELAY_PATH (outside Nest, never limited): this pod's largest event-loop delay in
 * ms since the previous call, i.e. how late the pod itself was running meanwhile.
 */
function serveLoopDelay(app: INestApplication): void {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  app.use(LOOP_DELAY_PATH, (_request: unknown, response: ServerResponse) => {
    response.end(String(delay.max / 1e6));
    delay.reset();
  });
}

const config = readConfig();
if (config.blockEventLoop) blockEventLoop(config.blockEventLoop);
const app = await NestFactory.create(podModule(config), { logger: ['error'] });
serveLoopDelay(app);
if (config.requestLog) {
  const log = requestLog();
  app.use(REQUEST_LOG_PATH, log.serve);
  app.use(log.record);
}
app.use(withResponseScope);
if (config.variant !== 'naive-redis') {
  stampDecisionTimes(app.get<RateLimitStore>(RATE_LIMIT_STORE));
  stampLeasedDecisions(app.get(RateLimiter));
}
await app.listen(0, '127.0.0.1');

const stop = (): void => {
  app.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.stdin.once('end', stop);
process.stdin.resume();
const { port } = app.getHttpServer().address() as AddressInfo;
process.stdout.write(`pod listening on ${port}\n`);
