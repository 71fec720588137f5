import { Controller, Get } from '@nestjs/common';
import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { byClientHeader, startApp } from '../support/test-app.js';

@Controller()
class LeasedController {
  @Get('leased')
  @RateLimit({ algorithm: 'fixed-window', limit: 100, window: '1h', lease: 10 })
  leased() {
    return { ok: true };
  }

  /** A fleet-wide budget, leased, beside each client's own, exact. */
  @Get('checkout')
  @RateLimit(
    {
      name: 'fleet',
      algorithm: 'fixed-window',
      limit: 1_000,
      window: '1h',
      lease: 10,
      keyBy: () => 'fleet',
    },
    { name: 'per-client', algorithm: 'fixed-window', limit: 2, window: '1h' },
  )
  checkout() {
    return { ok: true };
  }
}

/** The guard under a lease: headers from what the pod holds, the store's own 429. */
const redis = useRedisServer();

it('counts remaining down from what the pod holds and denies with the store exact Retry-After', async () => {
  const running = await startApp(
    'express',
    [RateLimitModule.forRoot({ redis: redis.server.url, keyBy: byClientHeader })],
    [LeasedController],
  );
  try {
    const remaining: number[] = [];
    for (let i = 0; i < 12; i++) {
      const response = await running.get('/leased', 'c');
      expect(response.status).toBe(200);
      remaining.push(Number(/r=(\d+)/.exec(response.headers.get('ratelimit')!)![1]));
    }
    expect(remaining).toEqual(Array.from({ length: 12 }, (_, i) => 99 - i));
    // Two store calls for twelve requests: a lease of ten, then the next (the count in the
    // fixed window's integer form, count * 2^20 + window index).
    const key = (await redis.admin.keys('*'))[0];
    expect(Math.floor(Number(await redis.admin.get(key)) / 2 ** 20)).toBe(20);
    for (let i = 12; i < 100; i++) await running.get('/leased', 'c');
    const denied = await running.get('/leased', 'c');
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(denied.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
  } finally {
    await running.close();
  }
});

it('leases a fleet-wide policy beside a per-client one, and a per-client 429 costs the fleet nothing', async () => {
  const running = await startApp(
    'express',
    [RateLimitModule.forRoot({ redis: redis.server.url, keyBy: byClientHeader })],
    [LeasedController],
  );
  /** The fleet's count in Redis (the fixed window's integer form). */
  const fleet = async () => {
    const [key] = await redis.admin.keys('*{fleet}*');
    return Math.floor(Number(await redis.admin.get(key)) / 2 ** 20);
  };
  try {
    for (let client = 0; client < 12; client++) {
      expect((await running.get('/checkout', `c${client}`)).status).toBe(200);
    }
    // Two leases of ten for twelve clients.
    expect(await fleet()).toBe(20);
    expect((await running.get('/checkout', 'c0')).status).toBe(200);
    const denied = await running.get('/checkout', 'c0');
    expect(denied.status).toBe(429);
    expect(await fleet()).toBe(20);
    // 13 of the 20 admitted: six more clients without another lease.
    for (let client = 12; client < 18; client++) {
      expect((await running.get('/checkout', `c${client}`)).status).toBe(200);
    }
    expect(await fleet()).toBe(20);
  } finally {
    await running.close();
  }
  // The app's close gives back the one unit left.
  expect(await fleet()).toBe(19);
});
