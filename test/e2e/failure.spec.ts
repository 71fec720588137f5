import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  RateLimit,
  RateLimiter,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitUnavailableException,
} from '../../lib/index.js';
import { freePort } from '../support/free-port.js';
import { type RedisServer, startRedisServer, untilWindowHasRoom } from '../support/redis-server.js';
import { byClientHeader, RecordingLogger, startApp, withApp } from '../support/test-app.js';
import { eventually, timed } from '../support/eventually.js';

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1h' })
  limited() {
    return 'ok';
  }
}

/** The documented default deadline. */
const TIMEOUT_MS = 100;
/**
 * What a request may take beyond the deadline: its HTTP round trip through Nest on
 * 127.0.0.1 (a few ms here with Redis up) and timers firing late on a 2-core machine busy
 * with other suites (tens of ms). 400 ms is ample for that, yet a deadline of 1 s, or
 * ioredis' own retries, cannot answer within TIMEOUT_MS + MARGIN_MS = 500 ms.
 */
const MARGIN_MS = 400;
const WITHIN_DEADLINE_MS = TIMEOUT_MS + MARGIN_MS;
/**
 * Room left in the hour-long window on Redis's clock before a test that counts across a
 * restart of Redis: the restart and `eventually`'s 8 s fit in it.
 */
const RESTART_ROOM_MS = 15_000;

/** The test's own Redis dies, stalls and comes back under a running app. */
describe('when Redis fails', () => {
  let server: RedisServer;
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(() => server.stop());

  const boot = (options: RateLimitModuleOptions, logger = new RecordingLogger()) =>
    startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: server.url,
          keyBy: byClientHeader,
          timeout: TIMEOUT_MS,
          ...options,
        }),
      ],
      [LimitedController],
      { logger },
    );

  it('fail-open admits within the deadline, warns once per interval, and recovers without a restart', async () => {
    const logger = new RecordingLogger();
    await withApp(boot({}, logger), async (running) => {
      await untilWindowHasRoom(server, 3_600_000, RESTART_ROOM_MS);
      expect((await running.get('/limited', 'a')).status).toBe(200);
      await server.kill();
      for (let i = 0; i < 10; i++) {
        const { status, ms } = await timed(() => running.get('/limited', 'a'));
        expect(status).toBe(200);
        expect(ms).toBeLessThan(WITHIN_DEADLINE_MS);
      }
      // One warning for the outage, whatever the number of requests, its cause in words.
      const failureWarnings = logger.warnings.filter((line) => line.includes('store unavailable'));
      expect(failureWarnings).toEqual([
        expect.stringMatching(/^Rate limit store unavailable: connection (lost|refused)/),
      ]);

      await server.restart();
      // Back: the budget of 2 that 'b' has now holds again, with no restart of the app.
      await eventually(
        async () => (await running.get('/limited', 'b')).headers.get('ratelimit') !== null,
      );
      expect((await running.get('/limited', 'b')).status).toBe(200);
      expect((await running.get('/limited', 'b')).status).toBe(429);
    });
  });

  it('fail-closed answers 503 with Retry-After and the JSON body', async () => {
    await withApp(boot({ failureMode: 'closed' }), async (running) => {
      await server.kill();
      const { status, response, ms } = await timed(() => running.get('/limited', 'c'));
      expect(status).toBe(503);
      expect(ms).toBeLessThan(WITHIN_DEADLINE_MS);
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(await response.json()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: expect.stringContaining('unavailable'),
        retryAfter,
      });
    });
  });

  it('enforces the deadline on a client the user configured to queue and retry', async () => {
    // ioredis defaults: offline queue on, 20 retries per request; the server stalls without closing.
    const client = new Redis(server.url);
    const running = await startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: client,
          keyBy: byClientHeader,
          timeout: TIMEOUT_MS,
          failureMode: 'closed',
        }),
      ],
      [LimitedController],
    );
    try {
      await eventually(async () => (await running.get('/limited', 'd')).status === 200);
      // A silent store: connected, never answering. The deadline, not an error, ends the
      // wait, so the request takes at least the deadline and not much more.
      await server.pause(2_000);
      const stalled = await timed(() => running.get('/limited', 'd'));
      expect(stalled.status).toBe(503);
      expect(stalled.ms).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(stalled.ms).toBeLessThan(WITHIN_DEADLINE_MS);
      await server.kill();
      const dead = await timed(() => running.get('/limited', 'd'));
      expect(dead.status).toBe(503);
      expect(dead.ms).toBeLessThan(WITHIN_DEADLINE_MS);
    } finally {
      await running.close();
      client.disconnect();
    }
  });

  it("local decides at this instance's share while Redis is down, with headers and 429s, and returns to Redis", async () => {
    const logger = new RecordingLogger();
    @Controller()
    class SharedController {
      @Get('shared')
      @RateLimit({ algorithm: 'fixed-window', limit: 9, window: '1h' })
      shared() {
        return 'ok';
      }
    }
    await withApp(
      startApp(
        'express',
        [
          RateLimitModule.forRoot({
            redis: server.url,
            keyBy: byClientHeader,
            timeout: TIMEOUT_MS,
            failureMode: 'local',
            instances: 3,
          }),
        ],
        [SharedController],
        { logger },
      ),
      async (running) => {
        // The local share's window is the same hour, on this machine's clock.
        await untilWindowHasRoom(server, 3_600_000, RESTART_ROOM_MS);
        expect((await running.get('/shared', 'g')).status).toBe(200);
        await server.kill();
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) {
          const response = await running.get('/shared', 'g');
          statuses.push(response.status);
          expect(response.headers.get('ratelimit')).not.toBeNull();
        }
        // 9 / 3 instances: three here, then 429s, never a 5xx.
        expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
        expect(
          logger.warnings.some((line) =>
            line.includes("failureMode 'local' at 1/3 of each limit applies"),
          ),
        ).toBe(true);

        await server.restart();
        // Back on Redis once the breaker's probe succeeds: a fresh client has 8 of 9 left there,
        // against at most 2 of 3 in the local share.
        let probe = 0;
        await eventually(async () =>
          /r=8/.test((await running.get('/shared', `probe-${probe++}`)).headers.get('ratelimit')!),
        );
        const back: number[] = [];
        for (let i = 0; i < 10; i++) back.push((await running.get('/shared', 'h')).status);
        expect(back).toEqual([...Array(9).fill(200), 429]);
      },
    );
  });

  it('lets the service reject with RateLimitUnavailableException, leaving the choice to the caller', async () => {
    await withApp(boot({}), async (running) => {
      const limiter = running.app.get(RateLimiter);
      await server.kill();
      await expect(limiter.consume('e', { limit: 1, window: '1m' })).rejects.toBeInstanceOf(
        RateLimitUnavailableException,
      );
    });
  });

  it('starts and serves (fail-open) when Redis is unreachable at start-up', async () => {
    const nowhere = `redis://127.0.0.1:${await freePort()}`;
    await withApp(
      startApp(
        'express',
        [RateLimitModule.forRoot({ redis: nowhere, keyBy: byClientHeader, timeout: TIMEOUT_MS })],
        [LimitedController],
      ),
      async (running) => {
        const { status, ms } = await timed(() => running.get('/limited', 'f'));
        expect(status).toBe(200);
        expect(ms).toBeLessThan(WITHIN_DEADLINE_MS);
      },
    );
  });
});
