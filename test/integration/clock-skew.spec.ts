import {
  EXACT_ALGORITHMS,
  type PodConfig,
  routePerAlgorithm,
  WEEK_MS,
} from '../../bench/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../../bench/pods/pod-fleet.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

const LIMIT = 50;
const REQUESTS = 12 * LIMIT;
const CONCURRENCY = 120;
/** How far each pod's Date.now() is off; pods at -30 s and +30 s are a minute apart. */
const CLOCK_SKEWS_MS = [-30_000, 30_000, -20_000, 20_000, -10_000, 10_000];
/**
 * A minute: the pods at -30 s and +30 s then always sit in neighbouring fixed windows,
 * whatever the real time, so their clocks, if trusted, disagree on every request.
 */
const MINUTE_MS = 60_000;

/**
 * Pods whose clocks are off by up to ±30 s, on one Redis. With `clock: 'redis'` time comes
 * from Redis TIME inside the script, so they still share one exact limit; with
 * `clock: 'local'` each pod's own clock decides which window a request falls in.
 */
describe('pods with skewed clocks', () => {
  let redis: RedisServer;
  let fleet: PodFleet | undefined;
  const startSkewedFleet = async (config: Omit<PodConfig, 'redisUrl'>): Promise<PodFleet> => {
    await fleet?.stop();
    fleet = await startPodFleet({
      pods: CLOCK_SKEWS_MS.length,
      config: { ...config, redisUrl: redis.url },
      clockSkewsMs: CLOCK_SKEWS_MS,
    });
    return fleet;
  };
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await fleet?.stop();
    await redis?.stop();
  });

  describe("with clock: 'redis'", () => {
    beforeAll(async () => {
      await startSkewedFleet({
        variant: 'library',
        clock: 'redis',
        prefix: 'redis-clock',
        routes: routePerAlgorithm(EXACT_ALGORITHMS, { limit: LIMIT, windowMs: WEEK_MS }),
      });
    }, 120_000);

    it.each(EXACT_ALGORITHMS)('%s still admits exactly its limit', async (route) => {
      const report = await fleet!.fire({
        route,
        clientKey: `skewed-${route}`,
        requests: REQUESTS,
        concurrency: CONCURRENCY,
      });
      expect(report.statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });
    });
  });

  describe("with clock: 'local'", () => {
    beforeAll(async () => {
      await startSkewedFleet({
        variant: 'library',
        clock: 'local',
        prefix: 'local-clock',
        routes: {
          'fixed-window': { algorithm: 'fixed-window', limit: LIMIT, windowMs: MINUTE_MS },
        },
      });
    }, 120_000);

    it('a fixed window admits more than its limit: each pod restarts the count in its own window', async () => {
      const report = await fleet!.fire({
        route: 'fixed-window',
        clientKey: 'skewed-local',
        requests: REQUESTS,
        concurrency: CONCURRENCY,
      });
      const { 200: admitted = 0, 429: denied = 0 } = report.statuses;
      expect(admitted + denied).toBe(REQUESTS);
      expect(admitted).toBeGreaterThan(LIMIT);
    });
  });
});
