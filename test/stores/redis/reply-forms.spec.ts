import { ALGORITHMS, type RateLimitPolicy } from '../../../lib/index.js';
import { LimiterFixture, VirtualClock } from '../../support/limiters.js';
import { useRedisServer } from '../../support/redis-fixture.js';

/**
 * A lone policy admitted at once comes back from Redis as one integer, remaining * 2^27 +
 * reset, when both fit (lua/decide-one.lua, lua/fixed-window-first.lua), else as the full
 * table. Both forms must read as the embedded store answers: limits and windows on either
 * side of what the integer holds, for every algorithm, admitted and (at the small limit) denied.
 */
const redisServer = useRedisServer();

describe('reply forms', () => {
  const clock = new VirtualClock();
  let redis: LimiterFixture;
  let memory: LimiterFixture;
  beforeAll(async () => {
    const options = { clock: clock.read, timeout: 5_000, denyCache: false };
    redis = await new LimiterFixture('redis', redisServer.server.url, options).ready();
    memory = new LimiterFixture('memory', undefined, options);
  });
  afterAll(() => Promise.all([redis.close(), memory.close()]));

  const cases = ALGORITHMS.flatMap((algorithm) =>
    [2, 2 ** 26, 2 ** 27].flatMap((limit) =>
      [1_000, 2 ** 27 + 5_000].map((window) => [algorithm, limit, window] as const),
    ),
  );

  it.each(cases)(
    '%s, limit %i, window %i ms: as the embedded store',
    async (algorithm, limit, window) => {
      const policy: RateLimitPolicy = { name: 'p', algorithm, limit, window };
      const key = `${algorithm}-${limit}-${window}`;
      // At limit 2 the second and third are denied.
      for (const cost of [1, 2, 1, 1]) {
        clock.advance(7);
        const [fromRedis, fromMemory] = await Promise.all(
          [redis, memory].map(({ limiter }) => limiter.consume(key, policy, cost)),
        );
        expect(fromRedis).toEqual(fromMemory);
      }
    },
  );
});
