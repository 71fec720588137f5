import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Cluster } from 'ioredis';
import {
  RateLimit,
  RateLimitHealthIndicator,
  type RateLimitModuleOptions,
  RateLimitModule,
  SkipRateLimit,
} from '../../lib/index.js';
import { hashSlot } from '../../lib/stores/redis/hash-slot.js';
import { eventually } from '../support/eventually.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { byClientHeader, type RunningApp, startApp } from '../support/test-app.js';

/** The readiness recipe of docs/observability.md. */
@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly rateLimit: RateLimitHealthIndicator,
  ) {}

  @Get('ready')
  @HealthCheck()
  @SkipRateLimit()
  ready() {
    return this.health.check([() => this.rateLimit.isHealthy()]);
  }
}

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ limit: 1_000, window: '1m' })
  limited() {
    return {};
  }
}

interface HealthBody {
  status: 'ok' | 'error';
  details: Record<string, Record<string, unknown>>;
}

const startHealthApp = (options: RateLimitModuleOptions) =>
  startApp(
    'express',
    [RateLimitModule.forRoot({ keyBy: byClientHeader, ...options }), TerminusModule],
    [HealthController, LimitedController],
  );

/** The readiness answer: its HTTP status and what it says of the rate limiter. */
async function readiness(running: RunningApp) {
  const response = await running.get('/health/ready');
  const text = await response.text();
  const body = JSON.parse(text) as HealthBody;
  return { status: response.status, text, rateLimit: body.details['rate-limit'] };
}

describe('RateLimitHealthIndicator with @nestjs/terminus', () => {
  it('embedded store: up, and says it is the embedded one', async () => {
    const running = await startHealthApp({});
    try {
      expect(await readiness(running)).toMatchObject({
        status: 200,
        rateLimit: { status: 'up', store: 'embedded', failureMode: 'open' },
      });
    } finally {
      await running.close();
    }
  });

  describe('on a Redis killed and restarted', () => {
    let server: RedisServer;
    let running: RunningApp;

    beforeAll(async () => {
      server = await startRedisServer();
      running = await startHealthApp({ redis: server.url });
    });
    afterAll(async () => {
      await running.close();
      await server.stop();
    });

    it('up, then down with the reason in words (no address), then up again with no request in between', async () => {
      expect(await readiness(running)).toEqual({
        status: 200,
        text: expect.any(String),
        rateLimit: { status: 'up', store: 'redis', failureMode: 'open' },
      });

      await server.kill();
      await eventually(async () => (await readiness(running)).status === 503);
      // Fail-open: the request passes, and the failed decision is reported too.
      expect((await running.get('/limited')).status).toBe(200);
      const down = await readiness(running);
      expect(down.status).toBe(503);
      expect(down.rateLimit).toMatchObject({
        status: 'down',
        store: 'redis',
        failureMode: 'open',
        breakerOpen: false,
        failingSince: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(down.rateLimit.reason).toMatch(
        /^Rate limit store not deciding: Redis connection is \w+; failing since \S+: (connection lost|connection refused: nothing listens at that address)\. failureMode 'open' applies: requests pass unlimited$/,
      );
      expect(down.text).not.toContain(String(server.port));
      expect(down.text).not.toContain('127.0.0.1');

      await server.restart();
      await eventually(async () => (await readiness(running)).status === 200);
      expect((await readiness(running)).rateLimit).toEqual({
        status: 'up',
        store: 'redis',
        failureMode: 'open',
      });
    });

    it("a silent Redis (SIGSTOP): down once the circuit breaker opens, failureMode 'open'; up again when it answers, with no request in between", async () => {
      await server.pause(2_500);
      // Three silent decisions in a row (the default breaker) open it.
      for (let i = 0; i < 3; i++) expect((await running.get('/limited')).status).toBe(200);
      const down = await readiness(running);
      expect(down.status).toBe(503);
      expect(down.rateLimit).toMatchObject({ status: 'down', breakerOpen: true });
      expect(down.rateLimit.reason).toMatch(
        /its circuit breaker is open; failing since \S+: no answer within 100 ms/,
      );
      await eventually(async () => (await readiness(running)).status === 200, 10_000);
    });
  });

  describe('on a Redis Cluster with one master stalled', () => {
    let cluster: RedisClusterHandle;
    let client: Cluster;
    let running: RunningApp;

    beforeAll(async () => {
      cluster = await startRedisCluster();
      client = new Cluster(cluster.nodes);
      running = await startHealthApp({ redis: client, failureMode: 'closed' });
    });
    afterAll(async () => {
      await running.close();
      client.disconnect();
      await cluster.stop();
    });

    it("down while that master's breaker is open, naming how many masters and failureMode 'closed'; up when it answers", async () => {
      expect((await readiness(running)).rateLimit).toMatchObject({ status: 'up' });
      const stalled = cluster.servers[1];
      let clientKey = '';
      for (let i = 0; !clientKey; i++) {
        if ((await cluster.ownerOf(hashSlot(`client-${i}`))) === stalled.port) {
          clientKey = `client-${i}`;
        }
      }
      await stalled.pause(2_500);
      for (let i = 0; i < 3; i++) {
        expect((await running.get('/limited', clientKey)).status).toBe(503);
      }
      const down = await readiness(running);
      expect(down.status).toBe(503);
      expect(down.rateLimit).toMatchObject({
        status: 'down',
        failureMode: 'closed',
        breakerOpen: false,
        mastersWithBreakerOpen: 1,
      });
      expect(down.rateLimit.reason).toMatch(
        /the circuit breaker of 1 Cluster master is open; .*failureMode 'closed' applies: requests are answered 503$/,
      );
      expect(down.text).not.toContain(String(stalled.port));
      await eventually(async () => (await readiness(running)).status === 200, 10_000);
    });
  });
});
