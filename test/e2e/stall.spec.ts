import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RateLimit } from '../../lib/rate-limit.decorator.js';
import { RateLimitModule } from '../../lib/rate-limit.module.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { byClientHeader, type RunningApp, startApp, withApp } from '../support/test-app.js';

const LIMIT_PER_SECOND = 20;
const CLIENTS = 5;
/** Each client sends at half its limit. */
const INTERVAL_MS = 1_000 / (LIMIT_PER_SECOND / 2);
const STALL_MS = 3_000;

@Controller()
class SteadyController {
  @Get('steady')
  @RateLimit({ algorithm: 'sliding-window-counter', limit: LIMIT_PER_SECOND, window: '1s' })
  steady() {
    return 'ok';
  }
}

/** Every client sends one request each INTERVAL_MS for `ms`; returns the statuses per client. */
async function steadyLoad(running: RunningApp, ms: number): Promise<number[][]> {
  const statuses: number[][] = Array.from({ length: CLIENTS }, () => []);
  const sent: Promise<void>[] = [];
  const startedAt = performance.now();
  for (let tick = 0; performance.now() - startedAt < ms; tick++) {
    for (let client = 0; client < CLIENTS; client++) {
      sent.push(
        running.get('/steady', `client-${client}`).then((response) => {
          statuses[client].push(response.status);
        }),
      );
    }
    const next = startedAt + (tick + 1) * INTERVAL_MS;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  await Promise.all(sent);
  return statuses;
}

/**
 * A decision the app stopped waiting for is never charged. While Redis stalls, the app
 * answers 503 (fail closed) after the deadline, but its commands stay queued in the socket
 * and run when Redis wakes: charged then, three seconds of them would land in one window
 * and push clients that stayed at half their limit into 429s. The breaker is off, so every
 * request of the stall reaches the queue (with it, only the first few would).
 */
describe('after Redis stalls for 3 s under steady load', () => {
  let server: RedisServer;
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(() => server.stop());

  it.each([
    ['SIGSTOP', (redis: RedisServer) => redis.pause(STALL_MS)],
    [
      'CLIENT PAUSE',
      async (redis: RedisServer) => {
        const admin = new Redis(redis.url);
        await admin.client('PAUSE', STALL_MS, 'ALL');
        admin.disconnect();
      },
    ],
  ])(
    '(%s) no client under its limit gets a 429',
    async (_how, stall) => {
      await withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              redis: server.url,
              keyBy: byClientHeader,
              failureMode: 'closed',
              breaker: false,
            }),
          ],
          [SteadyController],
        ),
        async (running) => {
          const load = steadyLoad(running, 1_000 + STALL_MS + 2_000);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          await stall(server);
          const statuses = await load;
          const all = statuses.flat();
          // The stall did happen: requests were refused meanwhile.
          expect(all.filter((status) => status === 503).length).toBeGreaterThan(CLIENTS * 10);
          expect(all.filter((status) => status !== 200 && status !== 503)).toEqual([]);
          // After it, every client is served again.
          for (const client of statuses) expect(client.slice(-5)).toEqual(Array(5).fill(200));
        },
      );
    },
    30_000,
  );
});
