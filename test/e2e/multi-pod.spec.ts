import { leakyBucketAdmissionBounds } from '../support/pods/leaky-bucket-bounds.js';
import {
  EXACT_ALGORITHMS,
  type PodConfig,
  type PodRoutePolicy,
  routePerAlgorithm,
  WEEK_MS,
} from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import { startRedisCluster } from '../support/redis-cluster.js';
import { describeOnServers } from '../support/redis-fixture.js';
import { startRedisServer } from '../support/redis-server.js';
import type { ServerKind } from '../support/server-kinds.js';

const POD_COUNT = 6;
const LIMIT = 50;
const REQUESTS = 12 * LIMIT;
const CONCURRENCY = 120;
/**
 * One request drains every 100 ms, so a run of a second or two drains a dozen or so. The
 * interval must dwarf how long a decision takes under this load (the uncertainty of each
 * decision's instant), or the bounds on what drained grow loose.
 */
const LEAKY_LIMIT = 20;
const LEAKY_WINDOW_MS = 2_000;
const LEAKY_BURST = 20;

const LEAKY_ROUTE: PodRoutePolicy = {
  algorithm: 'leaky-bucket',
  limit: LEAKY_LIMIT,
  windowMs: LEAKY_WINDOW_MS,
  burst: LEAKY_BURST,
};

/** A fixed window each pod leases 5 of at a time (docs/leases.md): every lease gets spent. */
const LEASED_ROUTE = 'leased-fixed-window';

/** Where the pods decide: a server or a 3-master Cluster, through a client of which library. */
interface PodStore {
  readonly topology: 'standalone' | 'Cluster';
  /** The module's own ioredis client on the URL (standalone), or a client the pods make. */
  readonly clientLibrary?: PodConfig['clientLibrary'];
}

/**
 * On Redis, the module's client on one server; on Valkey, ioredis and iovalkey, standalone
 * and on a Cluster, each once.
 */
const STORES_ON: Record<ServerKind, readonly PodStore[]> = {
  redis: [{ topology: 'standalone' }],
  valkey: [
    { topology: 'standalone' },
    { topology: 'standalone', clientLibrary: 'iovalkey' },
    { topology: 'Cluster', clientLibrary: 'ioredis' },
    { topology: 'Cluster', clientLibrary: 'iovalkey' },
  ],
};

/** The server or Cluster the pods share, and the config entries that point them at it. */
async function startStore(server: ServerKind, { topology, clientLibrary }: PodStore) {
  if (topology === 'standalone') {
    const redis = await startRedisServer({ server });
    return { where: { redisUrl: redis.url, clientLibrary }, stop: () => redis.stop() };
  }
  const cluster = await startRedisCluster(3, { server });
  return { where: { redisCluster: { nodes: cluster.nodes }, clientLibrary }, stop: cluster.stop };
}

/**
 * Separate Node processes, each the same Nest app with the guard, on one Redis: one
 * client's requests spread round-robin over them, 120 in flight, 12 times the limit.
 */
describeOnServers((server) =>
  describe.each(
    STORES_ON[server].map((store) => ({
      ...store,
      through: store.clientLibrary ?? "the module's ioredis",
    })),
  )(`${POD_COUNT} pods sharing one $topology, through $through`, (store) => {
    let stopStore: (() => Promise<void>) | undefined;
    let fleet: PodFleet;
    beforeAll(async () => {
      const started = await startStore(server, store);
      stopStore = started.stop;
      fleet = await startPodFleet({
        pods: POD_COUNT,
        config: {
          variant: 'library',
          ...started.where,
          prefix: 'multi-pod',
          routes: {
            ...routePerAlgorithm(EXACT_ALGORITHMS, { limit: LIMIT, windowMs: WEEK_MS }),
            'leaky-bucket': LEAKY_ROUTE,
            [LEASED_ROUTE]: {
              algorithm: 'fixed-window',
              limit: LIMIT,
              windowMs: WEEK_MS,
              lease: 5,
            },
          },
        },
      });
    }, 120_000);
    afterAll(async () => {
      await fleet?.stop();
      await stopStore?.();
    });

    it.each([...EXACT_ALGORITHMS, LEASED_ROUTE])('%s admits exactly its limit', async (route) => {
      const report = await fleet.fire({
        route,
        clientKey: `client-of-${route}`,
        requests: REQUESTS,
        concurrency: CONCURRENCY,
      });
      expect(report.statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });
      expect(report).toMatchObject({ admitted: LIMIT, failedOpen: 0 });
    });

    it('leaky bucket admits its queue plus what drained during the run, and no more', async () => {
      const report = await fleet.fire({
        route: 'leaky-bucket',
        clientKey: 'client-of-leaky-bucket',
        requests: REQUESTS,
        concurrency: CONCURRENCY,
      });
      const { 200: admitted = 0, 429: denied = 0 } = report.statuses;
      expect(admitted + denied).toBe(REQUESTS);
      const bounds = leakyBucketAdmissionBounds(
        report.responses,
        LEAKY_BURST,
        LEAKY_WINDOW_MS / LEAKY_LIMIT,
      );
      expect(admitted).toBeGreaterThanOrEqual(bounds.min);
      expect(admitted).toBeLessThanOrEqual(bounds.max);
    });
  }),
);

describe('pods failing open', () => {
  it('are reported apart: a 200 no store decided is never counted as admitted', async () => {
    const redis = await startRedisServer();
    const fleet = await startPodFleet({
      pods: 2,
      config: {
        variant: 'library',
        redisUrl: redis.url,
        prefix: 'fail-open',
        routes: routePerAlgorithm(['fixed-window'], { limit: 5, windowMs: WEEK_MS }),
        failureMode: 'open',
        decisionTimeoutMs: 100,
      },
    });
    try {
      const load = { route: 'fixed-window', requests: 10, concurrency: 2 };
      const decided = await fleet.fire({ ...load, clientKey: 'up' });
      expect(decided).toMatchObject({ admitted: 5, failedOpen: 0 });
      await redis.stop();
      const undecided = await fleet.fire({ ...load, clientKey: 'down' });
      expect(undecided.statuses).toEqual({ 200: 10 });
      expect(undecided).toMatchObject({ admitted: 0, failedOpen: 10 });
    } finally {
      await fleet.stop();
      await redis.stop();
    }
  }, 60_000);
});
