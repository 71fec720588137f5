import type { PodConfig } from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import { useRedisServer } from '../support/redis-fixture.js';

const LIMIT = 50;
const REQUESTS = 12 * LIMIT;
const CONCURRENCY = 120;
/** How far each pod's Date.now() is off; pods at -30 s and +30 s are a minute apart. */
const CLOCK_SKEWS_MS = [-30_000, 30_000, -20_000, 20_000, -10_000, 10_000];
/**
 * One route, a sliding window log over one minute: as long as the skew, so pods that trust
 * their own clocks disagree on which entries are still in the window, and with no epoch
 * boundary for a run of a second or two to straddle, so the exact count cannot flake.
 */
const ROUTE = 'sliding-window-log';
const ROUTES: PodConfig['routes'] = {
  [ROUTE]: { algorithm: 'sliding-window-log', limit: LIMIT, windowMs: 60_000 },
};

// Out here, not in the describe: its afterAll stops the pods before this stops Redis.
const redis = useRedisServer();

/**
 * Pods whose clocks are off by up to ±30 s, on one Redis, the same route and client on all.
 * With `clock: 'redis'` the script reads Redis TIME, so they share one exact limit; with
 * `clock: 'local'` the same route is decided on each pod's own clock, and they must not.
 */
describe('pods with skewed clocks, one route: a 1-minute sliding window log', () => {
  let fleet: PodFleet | undefined;
  const admittedWith = async (clock: 'redis' | 'local'): Promise<number> => {
    await fleet?.stop();
    fleet = await startPodFleet({
      pods: CLOCK_SKEWS_MS.length,
      config: {
        variant: 'library',
        clock,
        prefix: clock,
        routes: ROUTES,
        redisUrl: redis.server.url,
      },
      clockSkewsMs: CLOCK_SKEWS_MS,
    });
    // One request per pod in turn first, so every pod has decided (and stamped an entry)
    // before the budget can fill; then the rest, many in flight.
    const opening = await fleet.fire({
      route: ROUTE,
      clientKey: 'skewed',
      requests: CLOCK_SKEWS_MS.length,
      concurrency: 1,
    });
    const rest = await fleet.fire({
      route: ROUTE,
      clientKey: 'skewed',
      requests: REQUESTS - CLOCK_SKEWS_MS.length,
      concurrency: CONCURRENCY,
    });
    const count = (status: number) =>
      (opening.statuses[status] ?? 0) + (rest.statuses[status] ?? 0);
    // Every request was decided (no 503 from the pods' closed failure mode).
    expect(count(200) + count(429)).toBe(REQUESTS);
    return count(200);
  };
  afterAll(() => fleet?.stop());

  it("clock: 'redis' admits exactly the limit", async () => {
    expect(await admittedWith('redis')).toBe(LIMIT);
  }, 120_000);

  it("clock: 'local' admits more: a pod ahead drops entries a pod behind just wrote", async () => {
    // The +30 s pod sees every entry stamped by the -30 s pod as older than its window
    // and trims it away: the other pods fill the whole budget without them, so whatever
    // the -30 s pod admitted (its opening request at least) comes on top.
    expect(await admittedWith('local')).toBeGreaterThan(LIMIT);
  }, 120_000);
});
