import { WEEK_MS } from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import { useRedisServer } from '../support/redis-fixture.js';

const POD_COUNT = 4;
const LIMIT = 100;
const REQUESTS = 1_500;
const CONCURRENCY = 300;

// Out here, not in the describe: its afterAll stops the pods before this stops Redis.
const redis = useRedisServer();

/**
 * Overload must not open the gate: pods on the module's default failure options (fail
 * open, 100 ms) whose event loops are each blocked 300 ms every second, on a healthy Redis,
 * under more load than the machine serves in time. Every decision that is only late waits
 * for its answer instead of admitting.
 */
describe(`${POD_COUNT} pods with blocked event loops on a healthy Redis`, () => {
  let fleet: PodFleet;
  beforeAll(async () => {
    fleet = await startPodFleet({
      pods: POD_COUNT,
      config: {
        variant: 'library',
        redisUrl: redis.server.url,
        prefix: 'overload',
        failureMode: 'open',
        decisionTimeoutMs: 100,
        blockEventLoop: { everyMs: 1_000, forMs: 300 },
        routes: {
          limited: { algorithm: 'sliding-window-counter', limit: LIMIT, windowMs: WEEK_MS },
        },
      },
    });
  }, 120_000);
  afterAll(() => fleet?.stop());

  it('admit exactly the limit on the default options', async () => {
    const report = await fleet.fire({
      route: 'limited',
      clientKey: 'overloaded',
      requests: REQUESTS,
      concurrency: CONCURRENCY,
    });
    expect(report.statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });
  }, 60_000);
});
