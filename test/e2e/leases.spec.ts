import { WEEK_MS } from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

const PODS = 6;
const LIMIT = 1_000;
const LEASE = 50;
const REQUESTS = 3_000;
const CONCURRENCY = 200;

/**
 * Six pod processes leasing one client's fixed window on one Redis (issue #21's race): a
 * window of a week, so the run sits in one window and "every window" is this one. Each
 * test uses a client key of its own; the last two end a pod each.
 */
describe(`${PODS} pods leasing ${LEASE} of a limit of ${LIMIT}`, () => {
  let redis: RedisServer;
  let fleet: PodFleet;
  beforeAll(async () => {
    redis = await startRedisServer();
    fleet = await startPodFleet({
      pods: PODS,
      config: {
        variant: 'library',
        redisUrl: redis.url,
        prefix: 'leases',
        routes: {
          leased: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WEEK_MS, lease: LEASE },
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await redis?.stop();
  });

  const fire = (clientKey: string, requests: number, pods?: number[]) =>
    fleet.fire({ route: 'leased', clientKey, requests, concurrency: CONCURRENCY, pods });

  it('admits exactly the limit when traffic reaches every pod (round robin)', async () => {
    const report = await fire('round-robin', REQUESTS);
    expect(report.statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });
    expect(report.failedOpen).toBe(0);
  }, 60_000);

  it('with all late traffic on one pod, loses at most the leases the others hold', async () => {
    // Every pod takes a lease, then only pod 0 is asked.
    const early = await fire('skewed', PODS);
    const late = await fire('skewed', REQUESTS, [0]);
    const admitted = early.admitted + late.admitted;
    expect(early.failedOpen + late.failedOpen).toBe(0);
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(admitted).toBeGreaterThanOrEqual(LIMIT - (PODS - 1) * LEASE);
    // Each of the other five spent one unit of its lease and holds the rest to the window's end.
    expect(admitted).toBe(LIMIT - (PODS - 1) * (LEASE - 1));
  }, 60_000);

  it('a pod killed holding a lease strands at most that lease', async () => {
    const early = await fire('killed', PODS);
    await fleet.stopPod(PODS - 1, 'SIGKILL');
    const late = await fire('killed', REQUESTS, [0, 1, 2, 3, 4]);
    const admitted = early.admitted + late.admitted;
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(admitted).toBeGreaterThanOrEqual(LIMIT - LEASE);
    expect(admitted).toBe(LIMIT - (LEASE - 1));
  }, 60_000);

  it('a pod closing gives back what it held', async () => {
    const early = await fire('closed', 4, [0, 1, 2, 4]);
    await fleet.stopPod(4, 'SIGTERM');
    const late = await fire('closed', REQUESTS, [0, 1, 2, 3]);
    expect(early.admitted + late.admitted).toBe(LIMIT);
  }, 60_000);
});
