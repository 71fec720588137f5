import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RateLimit, RateLimiter, RateLimitModule, type RateLimitPolicy } from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { type AdapterKind, byClientHeader, startApp, withApp } from '../support/test-app.js';

const BLOCK_MS = 5_000;

@Controller()
class BlockingController {
  // One request per 200 ms window; a denial keeps the client out for 5 s.
  @Get('blocking')
  @RateLimit({ algorithm: 'fixed-window', limit: 1, window: 200, blockDuration: '5s' })
  blocking() {
    return 'ok';
  }
}

const redis = useRedisServer();

const seconds = (value: string | null) => Number(value);
/** The `t` of the RateLimit header (one policy). */
const resetSeconds = (value: string | null) => Number(/;t=(\d+)/.exec(value ?? '')?.[1]);

describe.each<AdapterKind>(['express', 'fastify'])('blockDuration over HTTP with %s', (adapter) => {
  it.each(['redis', 'embedded'])(
    'keeps a denied client out for the block, counting it down, then lets it in (%s store)',
    async (store) => {
      const running = startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: store === 'redis' ? redis.server.url : undefined,
            prefix: `block-${adapter}`,
            keyBy: byClientHeader,
          }),
        ],
        [BlockingController],
      );
      await withApp(running, async (app) => {
        const who = `blocked-${Date.now()}`;
        expect((await app.get('/blocking', who)).status).toBe(200);
        // The first 429, however the requests fall across the 200 ms windows.
        let denied = await app.get('/blocking', who);
        for (let tries = 0; denied.status === 200 && tries < 5; tries++) {
          denied = await app.get('/blocking', who);
        }
        const deniedAt = Date.now();
        expect(denied.status).toBe(429);
        expect(seconds(denied.headers.get('retry-after'))).toBe(BLOCK_MS / 1000);
        expect(resetSeconds(denied.headers.get('ratelimit'))).toBe(BLOCK_MS / 1000);

        // The window is long over, so without the block this request would pass.
        await sleep(1_200);
        const stillBlocked = await app.get('/blocking', who);
        expect(stillBlocked.status).toBe(429);
        const retryAfter = seconds(stillBlocked.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThan(BLOCK_MS / 1000);
        expect(resetSeconds(stillBlocked.headers.get('ratelimit'))).toBe(retryAfter);

        await sleep(Math.max(0, deniedAt + BLOCK_MS + 100 - Date.now()));
        expect((await app.get('/blocking', who)).status).toBe(200);
      });
    },
    30_000,
  );

  it('through the service: retryAfterMs counts the block down; peeks neither start nor extend it', async () => {
    await withApp(
      startApp(
        adapter,
        [RateLimitModule.forRoot({ redis: redis.server.url, prefix: `block-svc-${adapter}` })],
        [],
      ),
      async (running) => {
        const limiter = running.app.get(RateLimiter);
        const policy: RateLimitPolicy = {
          algorithm: 'token-bucket',
          limit: 1,
          window: 100,
          blockDuration: BLOCK_MS,
        };
        const key = `svc-${Date.now()}`;
        expect((await limiter.consume(key, policy)).allowed).toBe(true);
        // A peek that would deny starts nothing.
        await limiter.peek(key, policy);
        await sleep(150);
        expect((await limiter.consume(key, policy)).allowed).toBe(true);
        const first = await limiter.consume(key, policy);
        expect(first.allowed).toBe(false);
        expect(first.results[0]).toMatchObject({ remaining: 0, retryAfterMs: BLOCK_MS });
        // The block is a key of its own beside the policy's, expiring when the block ends.
        const admin = new Redis(redis.server.url);
        const blockKeys = await admin.keys(`block-svc-${adapter}:*:block`);
        expect(blockKeys).toHaveLength(1);
        const ttl = await admin.pttl(blockKeys[0]);
        admin.disconnect();
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(BLOCK_MS);
        await sleep(300);
        const peeked = await limiter.peek(key, policy);
        const later = await limiter.consume(key, policy);
        for (const decision of [peeked, later]) {
          expect(decision.allowed).toBe(false);
          expect(decision.results[0].retryAfterMs).toBeLessThanOrEqual(BLOCK_MS - 300);
          expect(decision.results[0].retryAfterMs).toBeGreaterThan(0);
          expect(decision.results[0].resetMs).toBe(decision.results[0].retryAfterMs);
        }
        // reset() lifts the block with the budget.
        await limiter.reset(key, policy);
        expect((await limiter.consume(key, policy)).allowed).toBe(true);
      },
    );
  }, 30_000);
});
