import { setTimeout as sleep } from 'node:timers/promises';
import { useRedisServer } from '../support/redis-fixture.js';
import { type ThrottlerApp, startThrottlerApp } from '../support/throttler/throttler-process.js';

/**
 * @nestjs/throttler's documented examples on two instances of one app sharing one Redis through
 * RedisThrottlerStorage (test/support/throttler/throttler-app.ts): each throttler admits exactly
 * its limit across both, as one instance with throttler's memory storage would alone.
 */

/** The statuses of requests made one after another, alternating between the instances. */
async function alternating(
  apps: readonly ThrottlerApp[],
  path: string,
  client: string,
  count: number,
) {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++)
    statuses.push((await apps[i % apps.length].get(path, client)).status);
  return statuses;
}

const times = (count: number, status: number) => Array<number>(count).fill(status);

describe('RedisThrottlerStorage in @nestjs/throttler apps, two instances', () => {
  const redis = useRedisServer();
  describe('on one Redis', () => {
    let apps: ThrottlerApp[];
    beforeAll(async () => {
      apps = await Promise.all([
        startThrottlerApp(redis.server.url),
        startThrottlerApp(redis.server.url),
      ]);
    });
    afterAll(() => Promise.all(apps.map((app) => app.stop())));

    it("the short throttler (3 per s): 3 admitted across both, then 429 with throttler's headers", async () => {
      expect(await alternating(apps, '/users', 'short', 3)).toEqual(times(3, 200));
      const denied = await apps[1].get('/users', 'short');
      expect(denied.status).toBe(429);
      expect(Number(denied.headers.get('retry-after-short'))).toBeGreaterThanOrEqual(1);
      expect(await denied.json()).toMatchObject({ statusCode: 429 });
      const admitted = await apps[0].get('/users', 'short-headers');
      expect(admitted.headers.get('x-ratelimit-limit-medium')).toBe('20');
      expect(admitted.headers.get('x-ratelimit-remaining-medium')).toBe('19');
    });

    it('the medium throttler (20 per 10 s, short and long skipped): exactly 20 of 40 concurrent requests across both', async () => {
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => apps[i % 2].get('/skipped/medium', 'burst')),
      );
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(20);
      expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    });

    it('@SkipThrottle on the controller: never limited', async () => {
      expect(await alternating(apps, '/skipped', 'skip', 30)).toEqual(times(30, 200));
    });

    it('@Throttle({ short: { limit: 5, ttl: 60000 } }) overrides the short throttler: 5 across both', async () => {
      expect(await alternating(apps, '/override', 'override', 7)).toEqual([
        ...times(5, 200),
        429,
        429,
      ]);
    });

    it('blockDuration: over the limit, blocked for 1.5 s; then the count starts again', async () => {
      expect(await alternating(apps, '/block', 'block', 4)).toEqual([200, 200, 429, 429]);
      const blocked = await apps[0].get('/block', 'block');
      expect(blocked.headers.get('retry-after-short')).toBe('2');
      await sleep(1_600);
      // Without the block the hits would count for their ttl (a minute); at its end they start over.
      expect(await alternating(apps, '/block', 'block', 3)).toEqual([200, 200, 429]);
    });
  });

  describe.each(['open', 'closed'] as const)('Redis killed, failureMode %s', (failureMode) => {
    const own = useRedisServer();
    let app: ThrottlerApp;
    beforeAll(async () => {
      app = await startThrottlerApp(own.server.url, failureMode);
    });
    afterAll(() => app.stop());

    it(
      failureMode === 'open' ? 'admits, within the deadline' : 'answers 503, within the deadline',
      async () => {
        expect((await app.get('/users', 'before')).status).toBe(200);
        await own.server.kill();
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const response = await app.get('/users', 'outage');
          expect(performance.now() - started).toBeLessThan(1_000);
          if (failureMode === 'open') {
            expect(response.status).toBe(200);
          } else {
            expect(response.status).toBe(503);
            // RateLimitExceptionFilter, registered by the app, renders the header.
            expect(response.headers.get('retry-after')).toBe('1');
            expect(await response.json()).toMatchObject({
              statusCode: 503,
              error: 'Service Unavailable',
            });
          }
        }
        expect(app.output()).toMatch(/Rate limit store unavailable/);
      },
    );
  });
});
