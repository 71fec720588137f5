import { useRedisServer } from '../support/redis-fixture.js';
import { runThrottlerScript } from '../support/throttler/throttler-process.js';

const redis = useRedisServer();

interface Outcome {
  readonly steps: number;
  readonly blocked: number;
  readonly mismatches: unknown[];
}

/** test/support/throttler/throttler-differential.ts tells how the traces are made. */
describe('RedisThrottlerStorage = @nestjs/throttler ThrottlerStorageService (differential)', () => {
  it('swept before every call: every field of 6000 increments over 4 random traces on a virtual clock', async () => {
    const { steps, blocked, mismatches } = await runThrottlerScript<Outcome>(
      'throttler-differential',
      { REDIS_URL: redis.server.url, SEEDS: '1,2,3,4', STEPS: '1500', SWEEP: 'always' },
    );
    expect(mismatches).toEqual([]);
    expect(steps).toBe(6_000);
    // The traces went through blocks, not only admissions.
    expect(blocked).toBeGreaterThan(1_000);
  });

  it('never swept: what the guard reads of 3000 increments over 2 other traces, limits of at least 1', async () => {
    const { steps, blocked, mismatches } = await runThrottlerScript<Outcome>(
      'throttler-differential',
      { REDIS_URL: redis.server.url, SEEDS: '5,6', STEPS: '1500', SWEEP: 'never' },
    );
    expect(mismatches).toEqual([]);
    expect(steps).toBe(3_000);
    expect(blocked).toBeGreaterThan(500);
  });
});
