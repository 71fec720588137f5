import { useRedisServer } from '../support/redis-fixture.js';
import { runThrottlerScript } from '../support/throttler/throttler-process.js';

const redis = useRedisServer();

/** test/support/throttler/throttler-differential.ts tells how the traces are made. */
describe('RedisThrottlerStorage = @nestjs/throttler ThrottlerStorageService (differential)', () => {
  it('answers every increment of 4 random traces of 1500 on a virtual clock with every field equal', async () => {
    const { steps, blocked, mismatches } = await runThrottlerScript<{
      steps: number;
      blocked: number;
      mismatches: unknown[];
    }>('throttler-differential', {
      REDIS_URL: redis.server.url,
      SEEDS: '1,2,3,4',
      STEPS: '1500',
    });
    expect(mismatches).toEqual([]);
    expect(steps).toBe(6_000);
    // The traces went through blocks, not only admissions.
    expect(blocked).toBeGreaterThan(1_000);
  });
});
