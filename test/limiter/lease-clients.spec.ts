import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import type { RateLimitDecision } from '../../lib/interfaces/rate-limit-decision.interface.js';
import type { ResolvedPolicy } from '../../lib/interfaces/resolved-policy.interface.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { clientTag, policyKey } from '../../lib/stores/store-keys.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import { VirtualClock } from '../support/limiters.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { untilReady } from '../support/redis-clients.js';
import type { RedisClientLike } from '../../lib/interfaces/redis-client.interface.js';
import { seededRandom } from '../support/seeded-random.js';

/**
 * A route with a global leased policy (one constant key for the whole fleet) beside an exact
 * per-user one: keys of two clients, one script on a single Redis, two hash tags in two
 * phases on a Cluster. On a virtual clock, in one window of a week.
 */
const WINDOW = 7 * 24 * 3_600_000;
const GLOBAL = 'global';
const LEASE = 10;

const route = (globalLimit: number, userLimit: number) =>
  resolvePolicies(
    [
      {
        name: 'checkout',
        algorithm: 'fixed-window',
        limit: globalLimit,
        window: WINDOW,
        lease: LEASE,
      },
      { name: 'per-user', algorithm: 'fixed-window', limit: userLimit, window: WINDOW },
    ],
    { label: 'test', defaultScope: 'global' },
  );

interface Topology {
  /** A pod's client, of the library under test. */
  readonly client: () => Promise<RedisClientLike>;
  readonly admin: Redis | Cluster;
  stop(): Promise<void>;
}

async function singleRedis(library: 'ioredis' | 'GLIDE'): Promise<Topology> {
  const server: RedisServer = await startRedisServer();
  const address = { host: '127.0.0.1', port: server.port };
  return topologyOf(
    () => new Redis(server.url),
    library === 'ioredis'
      ? async () => new Redis(server.url)
      : () => GlideClient.createClient({ addresses: [address] }),
    () => server.stop(),
  );
}

async function redisCluster(library: 'ioredis' | 'GLIDE'): Promise<Topology> {
  const cluster: RedisClusterHandle = await startRedisCluster(3);
  return topologyOf(
    () => new Cluster(cluster.nodes),
    library === 'ioredis'
      ? async () => new Cluster(cluster.nodes)
      : () => GlideClusterClient.createClient({ addresses: [...cluster.nodes] }),
    () => cluster.stop(),
  );
}

/** Clients of one topology, and the test's own look at it (`admin`, ioredis). */
function topologyOf(
  admin: () => Redis | Cluster,
  client: () => Promise<RedisClientLike>,
  stop: () => Promise<void>,
): Topology {
  const look = admin();
  return {
    client,
    admin: look,
    async stop() {
      look.disconnect();
      await stop();
    },
  };
}

describe.each([
  ['a single Redis', singleRedis, 'ioredis'],
  ['a Redis Cluster', redisCluster, 'ioredis'],
  ['a single Redis', singleRedis, 'GLIDE'],
  ['a Redis Cluster', redisCluster, 'GLIDE'],
] as const)('on %s through %s', (_, topologyOn, library) => {
  const start = () => topologyOn(library);
  let topology: Topology;
  let prefix = 0;
  beforeAll(async () => {
    topology = await start();
  }, 60_000);
  afterAll(() => topology?.stop());
  const open: (() => Promise<void>)[] = [];
  afterEach(() => Promise.all(open.splice(0).map((close) => close())));

  /** Pods on one virtual clock, under a prefix of the test's own. */
  async function fleet(pods: number, clock: VirtualClock) {
    const options = resolveOptions({ clock: clock.read, prefix: `t${++prefix}`, timeout: 2_000 });
    const made = await Promise.all(
      Array.from({ length: pods }, async () => {
        const client = await topology.client();
        const store = new RedisStore(client, true);
        return { client, store, limiter: new RateLimiter(options, store) };
      }),
    );
    await Promise.all(made.map(({ client }) => untilReady(client)));
    /** What a policy's fixed window counts in Redis for a client key. */
    const counted = async (clientKey: string, policy: ResolvedPolicy) => {
      const key = policyKey(options.prefix, clientTag(clientKey), policy.keySuffix);
      const state = await topology.admin.get(key);
      if (state === null) return 0;
      return state.includes(':')
        ? Number(state.split(':')[1])
        : Math.floor(Number(state) / 2 ** 20);
    };
    let closed: Promise<void> | undefined;
    const close = () =>
      (closed ??= (async () => {
        await Promise.all(made.map(({ limiter }) => limiter.onApplicationShutdown()));
        await Promise.all(made.map(({ store }) => store.close()));
      })());
    open.push(close);
    return { pods: made.map(({ limiter }) => limiter), counted, close };
  }

  /** A clock at the start of a window. */
  const windowStart = () => new VirtualClock(Math.floor(1_700_000_000_000 / WINDOW) * WINDOW + 1);
  const checkout = (
    limiter: RateLimiter,
    user: string,
    policies: ResolvedPolicy[],
    costs = [1, 1],
  ) => limiter.decide('consume', [GLOBAL, user], policies, costs);

  it('takes the global budget by leases, the per-user one exactly', async () => {
    const policies = route(1_000, 3);
    const { pods, counted, close } = await fleet(1, windowStart());
    for (let user = 0; user < 15; user++) {
      expect((await checkout(pods[0], `u${user}`, policies)).allowed).toBe(true);
    }
    // Two leases of 10, not 15 charges.
    expect(await counted(GLOBAL, policies[0])).toBe(2 * LEASE);
    expect(await counted('u3', policies[1])).toBe(1);
    await close();
    // The pod's 5 left went back at close.
    expect(await counted(GLOBAL, policies[0])).toBe(15);
  });

  it('a per-user denial charges the global budget nothing: its unit stays with the pod', async () => {
    const policies = route(1_000, 3);
    const { pods, counted } = await fleet(1, windowStart());
    for (let i = 0; i < 3; i++) await checkout(pods[0], 'u', policies);
    const denied = await checkout(pods[0], 'u', policies);
    expect(denied.allowed).toBe(false);
    expect(denied.results.map((result) => result.allowed)).toEqual([true, false]);
    // 3 of the lease admitted, 7 left: seven other users are admitted without a new lease.
    for (let user = 0; user < 7; user++) await checkout(pods[0], `v${user}`, policies);
    expect(await counted(GLOBAL, policies[0])).toBe(LEASE);
    expect(await counted('u', policies[1])).toBe(3);
  });

  it('a global denial charges the user nothing, the lease call included', async () => {
    const policies = route(20, 3);
    const { pods, counted } = await fleet(2, windowStart());
    // Another pod spends the global budget exactly (a cost beyond the lease).
    expect((await checkout(pods[1], 'w', policies, [20, 1])).allowed).toBe(true);
    const denied = await checkout(pods[0], 'u', policies);
    expect(denied.allowed).toBe(false);
    expect(denied.results[0].allowed).toBe(false);
    expect(await counted('u', policies[1])).toBe(0);
  });

  it.each(Array.from({ length: 16 }, (_, i) => i + 1))(
    'seed %d: never over either limit, and every charge is an admission once pods close',
    async (seed) => {
      const random = seededRandom(seed);
      const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
      const users = int(2, 5);
      const globalLimit = int(30, 120);
      const userLimit = int(5, 30);
      const policies = route(globalLimit, userLimit);
      const clock = windowStart();
      const { pods, counted, close } = await fleet(int(2, 4), clock);
      const admitted = new Map<string, number>();
      const add = (key: string, cost: number) => admitted.set(key, (admitted.get(key) ?? 0) + cost);
      for (let step = 0; step < 40; step++) {
        const batch = Array.from({ length: int(1, 12) }, () => ({
          pod: pods[int(0, pods.length - 1)],
          user: `u${int(1, users)}`,
          costs: [int(1, 3), int(1, 2)],
          peek: random() < 0.15,
        }));
        const decisions: RateLimitDecision[] = await Promise.all(
          batch.map(({ pod, user, costs, peek }) =>
            pod.decide(peek ? 'peek' : 'consume', [GLOBAL, user], policies, costs),
          ),
        );
        decisions.forEach(({ allowed }, i) => {
          const { user, costs, peek } = batch[i];
          if (!allowed || peek) return;
          add(GLOBAL, costs[0]);
          add(user, costs[1]);
        });
        clock.advance(int(0, 50));
      }
      await close();
      expect(admitted.get(GLOBAL) ?? 0).toBeLessThanOrEqual(globalLimit);
      // Give-backs done: the global count is what was admitted, no unit stranded nor charged
      // to a denied request; a user's count likewise.
      expect(await counted(GLOBAL, policies[0])).toBe(admitted.get(GLOBAL) ?? 0);
      for (let user = 1; user <= users; user++) {
        const key = `u${user}`;
        expect(admitted.get(key) ?? 0).toBeLessThanOrEqual(userLimit);
        expect(await counted(key, policies[1])).toBe(admitted.get(key) ?? 0);
      }
    },
  );
});
