import { Redis } from 'ioredis';
import { WEEK_MS } from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import { useRedisServer } from '../support/redis-fixture.js';

const POD_COUNT = 3;
/**
 * Far more than Redis decides before the kill, even on a loaded machine: a pod that Redis
 * has denied keeps the denial in its deny cache for the week and answers the client from
 * it, so it would never decide locally.
 */
const LIMIT = 300;
const SHARE = LIMIT / POD_COUNT;
/** Each pod gets a third, past its share once Redis is gone: some denied locally too. */
const REQUESTS = 900;
const CONCURRENCY = 60;

// Out here, not in the describe: its afterAll stops the pods before this stops Redis.
const redis = useRedisServer();

/**
 * failureMode 'local' across pods: Redis is killed while one client's requests flow; the
 * pods then decide in-process, each at its share of the limit, and nobody gets a 5xx.
 */
describe(`${POD_COUNT} pods on failureMode 'local' when Redis is killed under load`, () => {
  let fleet: PodFleet;
  beforeAll(async () => {
    fleet = await startPodFleet({
      pods: POD_COUNT,
      config: {
        variant: 'library',
        redisUrl: redis.server.url,
        prefix: 'local',
        failureMode: 'local',
        instances: POD_COUNT,
        decisionTimeoutMs: 100,
        routes: { limited: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WEEK_MS } },
      },
    });
  }, 120_000);
  afterAll(() => fleet?.stop());

  it('each pod admits at most its share, with no 5xx', async () => {
    const firing = fleet.fire({
      route: 'limited',
      clientKey: 'through-the-outage',
      requests: REQUESTS,
      concurrency: CONCURRENCY,
    });
    // Killed once Redis has decided some of them: its budget key exists.
    const admin = new Redis(redis.server.url);
    while ((await admin.dbsize()) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    admin.disconnect();
    await redis.server.kill();
    const report = await firing;

    expect(Object.keys(report.statuses).sort()).toEqual(['200', '429']);
    // Decisions Redis made carry the pods' decision stamps; local ones do not.
    const admitted = report.responses.filter((response) => response.status === 200);
    const byRedis = admitted.filter((response) => response.decisionStartedAt !== undefined);
    expect(byRedis.length).toBeLessThanOrEqual(LIMIT);
    const byPodLocally = Array.from(
      { length: POD_COUNT },
      (_, pod) =>
        admitted.filter(
          (response) => response.pod === pod && response.decisionStartedAt === undefined,
        ).length,
    );
    // Killed under load: Redis decided some requests, each pod decided others itself.
    expect(report.responses.some((response) => response.decisionStartedAt !== undefined)).toBe(
      true,
    );
    expect(Math.min(...byPodLocally)).toBeGreaterThan(0);
    expect(Math.max(...byPodLocally)).toBeLessThanOrEqual(SHARE);
  }, 60_000);
});
