import { leakyBucketAdmissionBounds } from '../../bench/pods/leaky-bucket-bounds.js';
import type { PodRoutePolicy } from '../../bench/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../../bench/pods/pod-fleet.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

const POD_COUNT = 6;
const LIMIT = 50;
const REQUESTS = 12 * LIMIT;
const CONCURRENCY = 120;
/** So long that nothing refills or slides out during a run, and a fixed window boundary
 *  (epoch-aligned) falls inside one with odds of about one in a million. */
const WEEK_MS = 7 * 24 * 3_600_000;
/**
 * One request drains every 100 ms, so a run of a second or two drains a dozen or so. The
 * interval must dwarf how long a decision takes under this load (the uncertainty of each
 * decision's instant), or the bounds on what drained grow loose.
 */
const LEAKY_LIMIT = 20;
const LEAKY_WINDOW_MS = 2_000;
const LEAKY_BURST = 20;

const EXACT_ROUTES = {
  'fixed-window': { algorithm: 'fixed-window', limit: LIMIT, windowMs: WEEK_MS },
  'sliding-window-log': { algorithm: 'sliding-window-log', limit: LIMIT, windowMs: WEEK_MS },
  'sliding-window-counter': {
    algorithm: 'sliding-window-counter',
    limit: LIMIT,
    windowMs: WEEK_MS,
  },
  'token-bucket': { algorithm: 'token-bucket', limit: LIMIT, windowMs: WEEK_MS },
} satisfies Record<string, PodRoutePolicy>;
const LEAKY_ROUTE: PodRoutePolicy = {
  algorithm: 'leaky-bucket',
  limit: LEAKY_LIMIT,
  windowMs: LEAKY_WINDOW_MS,
  burst: LEAKY_BURST,
};

/**
 * Separate Node processes, each the same Nest app with the guard, on one Redis: one
 * client's requests spread round-robin over them, 120 in flight, 12 times the limit.
 */
describe(`${POD_COUNT} pods sharing one Redis`, () => {
  let redis: RedisServer;
  let fleet: PodFleet;
  beforeAll(async () => {
    redis = await startRedisServer();
    fleet = await startPodFleet({
      pods: POD_COUNT,
      config: {
        variant: 'library',
        redisUrl: redis.url,
        prefix: 'multi-pod',
        routes: { ...EXACT_ROUTES, 'leaky-bucket': LEAKY_ROUTE },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await redis?.stop();
  });

  it.each(Object.keys(EXACT_ROUTES))('%s admits exactly its limit', async (route) => {
    const report = await fleet.fire({
      route,
      clientKey: `client-of-${route}`,
      requests: REQUESTS,
      concurrency: CONCURRENCY,
    });
    expect(report.statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });
  });

  it('leaky bucket admits its queue plus what drained during the run, and no more', async () => {
    const report = await fleet.fire({
      route: 'leaky-bucket',
      clientKey: 'client-of-leaky-bucket',
      requests: REQUESTS,
      concurrency: CONCURRENCY,
    });
    const bounds = leakyBucketAdmissionBounds(
      report.responses,
      LEAKY_BURST,
      LEAKY_WINDOW_MS / LEAKY_LIMIT,
    );
    expect(report.statuses[200] + report.statuses[429]).toBe(REQUESTS);
    expect(report.admitted).toBeGreaterThanOrEqual(bounds.min);
    expect(report.admitted).toBeLessThanOrEqual(bounds.max);
  });
});
