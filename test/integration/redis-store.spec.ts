import { Redis } from 'ioredis';
import { ALGORITHMS, type RateLimitPolicy } from '../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

/** What only the Redis store can get wrong: keys, expiries, script loading and Redis time. */
describe('Redis store', () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });
  beforeEach(() => admin.flushall());

  describe('on the Redis clock', () => {
    let fixture: LimiterFixture;
    beforeAll(async () => {
      fixture = await new LimiterFixture('redis', server.url, { prefix: 'app1' }).ready();
    });
    afterAll(() => fixture.close());

    it.each(ALGORITHMS)(
      '%s: every key it writes has an expiry no longer than its need',
      async (algorithm) => {
        const policy: RateLimitPolicy = { algorithm, limit: 5, window: '10s' };
        await fixture.limiter.consume('user-1', policy, 2);
        const keys = await admin.keys('*');
        expect(keys).toEqual([expect.stringMatching(/^app1:\{user-1\}:default:/)]);
        const ttl = await admin.pttl(keys[0]);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(20_000);
      },
    );

    it('keeps every key of a decision in one hash tag and under 256 bytes, whatever the client key', async () => {
      const policies: RateLimitPolicy[] = [
        { name: 'a', algorithm: 'sliding-window-log', limit: 5, window: '1m' },
        { name: 'b', algorithm: 'token-bucket', limit: 5, window: '1m' },
      ];
      const hostile = ['}{evil}', 'line\nbreak', 'x'.repeat(10_000), 'ünïcødé ☃', '#fake-hash', ''];
      for (const clientKey of hostile) await fixture.limiter.consume(clientKey, policies);
      const keys = await admin.keys('*');
      expect(keys).toHaveLength(hostile.length * policies.length);
      const tags = new Set<string>();
      for (const key of keys) {
        expect(Buffer.byteLength(key)).toBeLessThan(256);
        const tag = /^app1:\{([^{}]+)\}:[ab]:/.exec(key)?.[1];
        expect(tag).toBeDefined();
        tags.add(tag!);
      }
      expect(tags.size).toBe(hostile.length);
    });

    it('reads time from Redis: a fixed window counts within the server clock', async () => {
      const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 3, window: '1h' };
      const results = [];
      for (let i = 0; i < 4; i++)
        results.push((await fixture.limiter.consume('clock', policy)).allowed);
      expect(results).toEqual([true, true, true, false]);
      const [seconds] = await admin.time();
      const windowEndsInMs =
        (Math.floor(Number(seconds) / 3600) + 1) * 3_600_000 - Number(seconds) * 1000;
      const ttl = await admin.pttl((await admin.keys('*'))[0]);
      expect(Math.abs(ttl - windowEndsInMs)).toBeLessThan(2_000);
    });

    it('reloads the script transparently after SCRIPT FLUSH (NOSCRIPT)', async () => {
      const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 5, window: '1m' };
      expect((await fixture.limiter.consume('noscript', policy)).allowed).toBe(true);
      await admin.script('FLUSH');
      const again = await fixture.limiter.consume('noscript', policy);
      expect(again.results[0].remaining).toBe(3);
    });
  });

  it('keeps keys of a virtual clock alive in real time long enough for a slow simulation', async () => {
    const clock = new VirtualClock();
    const fixture = await new LimiterFixture('redis', server.url, { clock: clock.read }).ready();
    await fixture.limiter.consume('sim', { algorithm: 'fixed-window', limit: 5, window: 10 });
    const [key] = await admin.keys('*');
    expect(await admin.pttl(key)).toBeGreaterThan(30_000);
    await fixture.close();
  });
});
