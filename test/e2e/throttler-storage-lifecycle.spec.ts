import { useRedisServer } from '../support/redis-fixture.js';
import { runThrottlerScript } from '../support/throttler/throttler-process.js';

/**
 * RedisThrottlerStorage from step 0 of docs/migrating-from-throttler.md, with REDIS_URL
 * unset, empty and set, and reused by a second app (test/support/throttler/storage-lifecycle.ts,
 * in a process of its own: @nestjs/throttler does not load under Jest). Every app limits
 * 2 a minute per client.
 */
interface Seen {
  unset: number[];
  unsetWarnings: string[];
  empty: string;
  virtualClockWithoutRedis: string;
  set: number[];
  reusedFirst: number[];
  reusedSecond: number[];
  inMemoryFirst: number[];
  inMemorySecond: number[];
}

const redis = useRedisServer();
let seen: Seen;
beforeAll(async () => {
  seen = await runThrottlerScript<Seen>('storage-lifecycle', {
    TEST_REDIS_URL: redis.server.url,
  });
}, 30_000);

describe('new RedisThrottlerStorage(process.env.REDIS_URL)', () => {
  it("REDIS_URL unset: limits on @nestjs/throttler's in-memory storage, warning once that limits are per process", () => {
    expect(seen.unset).toEqual([200, 200, 429, 200]);
    expect(seen.unsetWarnings).toEqual([
      expect.stringMatching(
        /^No redis given: using @nestjs\/throttler's in-memory storage, so limits are per process/,
      ),
    ]);
  });

  it('REDIS_URL empty: a RateLimitConfigError that says so', () => {
    expect(seen.empty).toMatch(
      /^RateLimitConfigError: .*option redis: is an empty string \(is REDIS_URL set but empty\?\).*leave it undefined/,
    );
  });

  it('REDIS_URL unset with a virtual clock: a RateLimitConfigError naming clock', () => {
    expect(seen.virtualClockWithoutRedis).toMatch(
      /^RateLimitConfigError: .*option clock: a function needs Redis/,
    );
  });

  it('REDIS_URL set: counts on Redis', async () => {
    expect(seen.set).toEqual([200, 200, 429]);
    expect(await redis.admin.keys('set:*')).not.toEqual([]);
  });
});

describe('one storage, a second app after the first closed', () => {
  it('on Redis: connects again and limits, on the count the first app left', () => {
    expect(seen.reusedFirst).toEqual([200, 200, 429]);
    expect(seen.reusedSecond).toEqual([200, 200, 429, 429, 429]);
  });

  it('in memory: limits again, from a clean slate', () => {
    expect(seen.inMemoryFirst).toEqual([200, 200, 429]);
    expect(seen.inMemorySecond).toEqual([200, 200, 429]);
  });
});
