import { ALGORITHMS } from '../../lib/index.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import type { DecideRequest } from '../../lib/interfaces/rate-limit-store.interface.js';
import { LimiterFixture, type StoreKind } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { redisNowMs, untilWindowHasRoom } from '../support/redis-server.js';

/**
 * A decision that reaches the store after the caller stopped waiting (`wantedUntil`, on
 * the store's real clock) charges nothing and says so, on every algorithm and both stores.
 */
const redis = useRedisServer();

const policies = resolvePolicies(
  ALGORITHMS.map((algorithm) => ({ name: algorithm, algorithm, limit: 1, window: '1m' })),
  { label: 'test', defaultScope: 'global' },
);

describe.each<StoreKind>(['redis', 'memory'])('%s store: wantedUntil', (kind) => {
  let fixture: LimiterFixture;
  beforeAll(async () => {
    fixture = await new LimiterFixture(kind, redis.server.url).ready();
  });
  afterAll(() => fixture.close());

  /** The store's real time: Redis TIME, or this process's Date.now(). */
  const storeNow = async () => {
    return fixture.client ? redisNowMs(fixture.client) : Date.now();
  };
  /** A consume of the first `count` policies (one script per combination). */
  const decide = (key: string, wantedUntil: number | undefined, now?: number, count = 5) => {
    const some = policies.slice(0, count);
    const request: DecideRequest = {
      mode: 'consume',
      keys: some.map((policy) => `t:{${key}}${policy.keySuffix}`),
      policies: some,
      costs: some.map(() => 1),
      now,
      ttlFloorMs: 0,
      wantedUntil,
    };
    return fixture.store.decide(request);
  };

  it.each([1, ALGORITHMS.length])(
    'past it, %i policies: a stale answer and nothing charged',
    async (count) => {
      const key = `late-${count}`;
      // Both in one minute of the store's clock (Redis's, or this machine's, the same): in a
      // new one a fixed window would admit even had the stale answer charged it.
      await untilWindowHasRoom(redis.server, 60_000);
      const stale = await decide(key, (await storeNow()) - 1, undefined, count);
      expect(stale).toEqual({ allowed: false, verdicts: [], stale: true });
      // Nothing was charged: the one unit of every policy is still there.
      const fresh = await decide(key, undefined, undefined, count);
      expect(fresh.allowed).toBe(true);
      expect(fresh.stale).toBeUndefined();
    },
  );

  it('before it: decided as usual, on the clock the app chose', async () => {
    const inTime = await decide('in-time', (await storeNow()) + 60_000, 1_700_000_000_000);
    expect(inTime.allowed).toBe(true);
    expect(inTime.verdicts).toHaveLength(policies.length);
    expect((await decide('in-time', undefined, 1_700_000_000_000)).allowed).toBe(false);
  });
});
