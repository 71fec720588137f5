import { Controller, type ExecutionContext, Get } from '@nestjs/common';
import { Cluster, type Redis } from 'ioredis';
import {
  ALGORITHMS,
  RateLimit,
  RateLimiter,
  RateLimitModule,
  type RateLimitPolicy,
} from '../../../lib/index.js';
import { resolveOptions } from '../../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import { RedisStore } from '../../../lib/stores/redis/redis.store.js';
import { timeMs } from '../../../lib/stores/redis/clients/redis-client-port.js';
import { type RedisClusterHandle, startRedisCluster } from '../../support/redis-cluster.js';
import {
  CLUSTER_CLIENTS_ON,
  type ClientUnderTest,
  clusterClientOf,
  GLIDE_REQUEST_TIMEOUT_MS,
} from '../../support/redis-clients.js';
import { describeOnServers } from '../../support/redis-fixture.js';
import { untilWindowHasRoom } from '../../support/redis-server.js';
import { byClientHeader, type RunningApp, startApp } from '../../support/test-app.js';
import { watchTimerLateness } from '../../support/timer-lateness.js';

/** Long windows: nothing refills, and an epoch-aligned boundary almost never falls in a test. */
const WINDOW = '7d';

const byTenantHeader = (context: ExecutionContext): string =>
  String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-tenant'],
  );

@Controller()
class ClusterController {
  /** Two policies of one client: one hash tag, one slot, one script. */
  @Get('tiered')
  @RateLimit(
    { name: 'burst', algorithm: 'token-bucket', limit: 3, window: WINDOW },
    { name: 'hourly', algorithm: 'sliding-window-log', limit: 5, window: WINDOW },
  )
  tiered() {
    return 'ok';
  }

  /** A client's budget and its tenant's: two hash tags, so two slots. */
  @Get('tenant')
  @RateLimit(
    { name: 'per-client', algorithm: 'fixed-window', limit: 3, window: WINDOW },
    {
      name: 'per-tenant',
      algorithm: 'sliding-window-counter',
      limit: 5,
      window: WINDOW,
      keyBy: byTenantHeader,
    },
  )
  tenant() {
    return 'ok';
  }

  /** As /tenant, with a block of an hour on the client's budget of 2 a minute. */
  @Get('tenant-blocking')
  @RateLimit(
    {
      name: 'per-client',
      algorithm: 'sliding-window-log',
      limit: 2,
      window: '1m',
      blockDuration: '1h',
    },
    {
      name: 'per-tenant',
      algorithm: 'fixed-window',
      limit: 3,
      window: WINDOW,
      keyBy: byTenantHeader,
    },
  )
  tenantBlocking() {
    return 'ok';
  }
}

describeOnServers((server) =>
  describe('Redis Cluster (3 masters)', () => {
    let cluster: RedisClusterHandle;
    /** The test's own look at the masters, whichever client the package decides through. */
    let admin: Cluster;
    beforeAll(async () => {
      cluster = await startRedisCluster(3, { server });
      admin = new Cluster(cluster.nodes);
      await new Promise((resolve) => admin.once('ready', resolve));
    }, 60_000);
    afterAll(async () => {
      admin?.disconnect();
      await cluster?.stop();
    });

    describe.each(CLUSTER_CLIENTS_ON[server])('through %s', (name) => {
      /** A prefix per client: all write to the one Cluster. */
      const PREFIX = {
        'ioredis Cluster': 'cl',
        'iovalkey Cluster': 'cv',
        'node-redis 6 Cluster': 'cn',
        'Valkey GLIDE Cluster': 'cg',
      }[name];
      /** GLIDE keeps its slot map to itself: no master is named, one breaker serves the Cluster. */
      const namesMasters = name !== 'Valkey GLIDE Cluster';
      let made: ClientUnderTest;
      let app: RunningApp;
      let limiter: RateLimiter;

      beforeAll(async () => {
        made = await clusterClientOf(name, cluster.nodes);
        await made.ready();
        app = await startApp(
          'express',
          [
            RateLimitModule.forRoot({
              redis: made.client,
              prefix: PREFIX,
              keyBy: byClientHeader,
              // A store error must show as 503, never pass as an admission.
              failureMode: 'closed',
              timeout: 2_000,
            }),
          ],
          [ClusterController],
        );
        limiter = app.app.get(RateLimiter);
      }, 60_000);
      afterAll(async () => {
        await app?.close();
        await made?.close();
      });
      /** Stores a test makes on the shared client: closed after it, taking their listeners off. */
      const stores: RedisStore[] = [];
      const storeOnClient = () => {
        const store = new RedisStore(made.client, false);
        stores.push(store);
        return store;
      };
      afterEach(() => Promise.all(stores.splice(0).map((store) => store.close())));

      const slotOf = (key: string): Promise<number> => admin.cluster('KEYSLOT', key);
      /** The process of the master at `node` (host:port, as the slot maps name it). */
      const serverAt = (node: string) =>
        cluster.servers.find((server) => node.endsWith(`:${server.port}`))!;
      const allKeys = async (): Promise<string[]> =>
        (await Promise.all(admin.nodes('master').map((node) => node.keys(`${PREFIX}:*`)))).flat();
      /** The keys `action` creates. */
      const keysWrittenBy = async (action: () => Promise<unknown>): Promise<string[]> => {
        const before = new Set(await allKeys());
        await action();
        return (await allKeys()).filter((key) => !before.has(key));
      };
      const getAs = (path: string, clientKey: string, tenant: string): Promise<Response> =>
        fetch(app.url + path, { headers: { 'x-client': clientKey, 'x-tenant': tenant } });

      it.each(ALGORITHMS)(
        '%s: the service consumes, peeks and resets on a Cluster client, admitting exactly the limit',
        async (algorithm) => {
          // Frozen time: a leaky bucket drains continuously, so one more millisecond would
          // rightly admit one more request and make the count depend on the machine's speed.
          const frozen = limiter.withClock(() => 1_750_000_000_000);
          const policy: RateLimitPolicy = { algorithm, limit: 5, window: WINDOW };
          const key = `service-${algorithm}`;
          const decisions = await Promise.all(
            Array.from({ length: 30 }, () => frozen.consume(key, policy)),
          );
          expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
          expect((await frozen.peek(key, policy)).allowed).toBe(false);
          await frozen.reset(key, policy);
          expect((await frozen.peek(key, policy)).allowed).toBe(true);
        },
      );

      it('decides a route with several policies of one client in one slot', async () => {
        const written = await keysWrittenBy(async () => {
          const statuses: number[] = [];
          for (let i = 0; i < 6; i++) statuses.push((await app.get('/tiered', 'alice')).status);
          expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
        });
        expect(written).toHaveLength(2);
        const [first, second] = await Promise.all(written.map(slotOf));
        expect(first).toBe(second);
      });

      it("keeps a policy's block key in its client's slot, in the same script call", async () => {
        const policies: RateLimitPolicy[] = [
          { name: 'a', algorithm: 'fixed-window', limit: 2, window: '1m', blockDuration: '1m' },
          { name: 'b', algorithm: 'token-bucket', limit: 5, window: '1m' },
        ];
        const key = 'blocked{client}';
        // The three charges in one minute of the masters' clock (this machine's).
        await untilWindowHasRoom(admin.nodes('master')[0], 60_000);
        const written = await keysWrittenBy(async () => {
          const decisions = [];
          for (let i = 0; i < 4; i++) decisions.push(await limiter.consume(key, policies));
          expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, false, false]);
          // The 4th is denied by the block the 3rd started, counted down from a minute.
          expect(decisions[3].results[0].retryAfterMs).toBeGreaterThan(0);
          expect(decisions[3].results[0].retryAfterMs).toBeLessThanOrEqual(60_000);
        });
        expect(written).toHaveLength(3);
        expect(written.filter((k) => k.endsWith(':block'))).toHaveLength(1);
        expect(new Set(await Promise.all(written.map(slotOf))).size).toBe(1);
        await limiter.reset(key, policies);
        expect((await limiter.consume(key, policies)).allowed).toBe(true);
      });

      it('decides policies keyed by different clients across slots, charging nothing when denied', async () => {
        // The route's two keys must really be in different slots for this to test anything.
        expect(await slotOf('{bob}')).not.toBe(await slotOf('{acme}'));
        const written = await keysWrittenBy(async () => {
          // Per client 3, per tenant 5: bob's 4th request is denied by his own budget...
          const bob: number[] = [];
          for (let i = 0; i < 4; i++) bob.push((await getAs('/tenant', 'bob', 'acme')).status);
          expect(bob).toEqual([200, 200, 200, 429]);
        });
        expect(new Set(await Promise.all(written.map(slotOf))).size).toBe(2);
        // ...and charged nothing to acme's, which still has exactly 2 left for carol.
        const carol: number[] = [];
        for (let i = 0; i < 3; i++) carol.push((await getAs('/tenant', 'carol', 'acme')).status);
        expect(carol).toEqual([200, 200, 429]);
      });

      it('gives a charge back to keys in several slots, one script per slot', async () => {
        const policies: RateLimitPolicy[] = [
          { name: 'refund-a', algorithm: 'fixed-window', limit: 2, window: '1h' },
          { name: 'refund-b', algorithm: 'sliding-window-log', limit: 2, window: '1h' },
        ];
        await untilWindowHasRoom(admin.nodes('master')[0], 3_600_000);
        const keys = [
          ...(await keysWrittenBy(() => limiter.consume('{ann}', policies[0], 2))),
          ...(await keysWrittenBy(() => limiter.consume('{acme}', policies[1], 2))),
        ];
        expect(new Set(await Promise.all(keys.map(slotOf))).size).toBe(2);
        await storeOnClient().refund({
          keys,
          policies: resolvePolicies(policies, { label: 'test', defaultScope: 'global' }),
          units: [1, 2],
          chargedAt: [undefined, undefined],
          now: undefined,
          ttlFloorMs: 0,
        });
        expect((await limiter.peek('{ann}', policies[0])).results[0].remaining).toBe(1);
        expect((await limiter.peek('{acme}', policies[1])).results[0].remaining).toBe(2);
      });

      it('starts a block at the first denial of a route across slots, in the check phase', async () => {
        expect(await slotOf('{hal}')).not.toBe(await slotOf('{umbrella}'));
        const deny = async (clientKey: string) => {
          const written = await keysWrittenBy(async () => {
            expect((await getAs('/tenant-blocking', clientKey, 'umbrella')).status).toBe(429);
          });
          return written.filter((key) => key.endsWith(':block'));
        };
        for (let i = 0; i < 2; i++)
          expect((await getAs('/tenant-blocking', 'hal', 'umbrella')).status).toBe(200);
        // hal's 3rd is denied by his own budget, found by the check (the tenant has 1 left): the
        // block starts there, in hal's slot, and is counted down from an hour, not from the
        // window's minute.
        const blocks = await deny('hal');
        expect(blocks).toHaveLength(1);
        const [block] = blocks;
        expect(await slotOf(block)).toBe(await slotOf('{hal}'));
        expect(await admin.pttl(block)).toBeGreaterThan(3_590_000);
        const blocked = await getAs('/tenant-blocking', 'hal', 'umbrella');
        expect(blocked.status).toBe(429);
        expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(3_590);
        expect(blocked.headers.get('ratelimit')).toMatch(/^"per-client";r=0;t=(3600|359\d),/);
        // The denials charged the tenant nothing: ivy takes its last unit. Her next request is
        // denied by the tenant's budget, which has no block, and hers allowed: no block starts.
        expect((await getAs('/tenant-blocking', 'ivy', 'umbrella')).status).toBe(200);
        expect(await deny('ivy')).toEqual([]);
      });

      it('never admits past any policy when concurrent requests span several slots', async () => {
        const clients = ['dan', 'erin', 'frank', 'grace'];
        const requests = clients.flatMap((clientKey) =>
          Array.from({ length: 10 }, () =>
            getAs('/tenant', clientKey, 'globex').then((response) => ({
              clientKey,
              status: response.status,
            })),
          ),
        );
        const results = await Promise.all(requests);
        expect(results.filter(({ status }) => status !== 200 && status !== 429)).toEqual([]);
        const admitted = results.filter(({ status }) => status === 200);
        expect(admitted.length).toBeGreaterThan(0);
        expect(admitted.length).toBeLessThanOrEqual(5);
        for (const clientKey of clients) {
          expect(
            admitted.filter((result) => result.clientKey === clientKey).length,
          ).toBeLessThanOrEqual(3);
        }
      });

      it('turns hostile client keys into short keys whose hash tag they cannot break', async () => {
        const policies: RateLimitPolicy[] = [
          { name: 'a', algorithm: 'fixed-window', limit: 1, window: WINDOW },
          { name: 'b', algorithm: 'token-bucket', limit: 1, window: WINDOW },
        ];
        const hostile = [
          'admin',
          '{admin}',
          '}{admin',
          'x{admin}y',
          'line\nbreak',
          'x'.repeat(10_000),
          'ünïcødé ☃ 🚀',
          '#fake-hash',
          '',
        ];
        const tags = new Set<string>();
        for (const clientKey of hostile) {
          const written = await keysWrittenBy(async () => {
            expect((await limiter.consume(clientKey, policies)).allowed).toBe(true);
          });
          expect(written).toHaveLength(2);
          const slots = new Set<number>();
          for (const key of written) {
            expect(Buffer.byteLength(key)).toBeLessThan(256);
            const tag = new RegExp(`^${PREFIX}:\\{([^{}]+)\\}:[ab]:`).exec(key)?.[1];
            expect(tag).toBeDefined();
            tags.add(tag!);
            slots.add(await slotOf(key));
            expect(await slotOf(key)).toBe(await slotOf(`{${tag}}`));
          }
          expect(slots.size).toBe(1);
        }
        // One tag per client: '{admin}' and its variants share nothing with 'admin'.
        expect(tags.size).toBe(hostile.length);
      });

      it('charges nothing for decisions abandoned while their node was stalled', async () => {
        // The library's defaults (100 ms deadline), closed, and no breaker: every decision of the
        // stall is sent and waits in the socket of the stopped master.
        const stallable = new RateLimiter(
          resolveOptions({ prefix: PREFIX, failureMode: 'closed', breaker: false }),
          storeOnClient(),
        );
        const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 10, window: WINDOW };
        const key = 'stalled-node';
        for (let i = 0; i < 5; i++)
          expect((await stallable.consume(key, policy)).allowed).toBe(true);
        const [written] = await keysWrittenBy(() => stallable.consume(key, policy));
        // ioredis' slot map: the slot's master first, as "host:port".
        const [master] = admin.slots[await slotOf(written)];
        const stalled = cluster.servers.find((server) => master.endsWith(`:${server.port}`))!;
        expect(stalled).toBeDefined();

        // Shorter than cluster-node-timeout (2 s): the other masters do not mark it failed.
        await stalled.pause(1_500);
        const abandoned = await Promise.allSettled(
          Array.from({ length: 20 }, () => stallable.consume(key, policy)),
        );
        expect(abandoned.every((result) => result.status === 'rejected')).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        // The 20 ran when the node woke, after their wantedUntil: 6 charged, so 3 left after this.
        expect((await stallable.consume(key, policy)).results[0].remaining).toBe(3);
      });

      it('gives a decision on a stalled master up at the deadline while the other masters answer', async () => {
        const timeout = 100;
        const stallable = new RateLimiter(
          resolveOptions({ prefix: PREFIX, failureMode: 'closed', breaker: false, timeout }),
          storeOnClient(),
        );
        const policy: RateLimitPolicy = {
          algorithm: 'fixed-window',
          limit: 10_000,
          window: WINDOW,
        };
        // A readable client key is its own hash tag: its master is the tag's slot's.
        const masterOf = async (key: string) => admin.slots[await slotOf(`{${key}}`)][0];
        const stalledKey = 'stalled-among-answering';
        const stalledMaster = await masterOf(stalledKey);
        let otherKey = 'answering-0';
        for (let i = 1; (await masterOf(otherKey)) === stalledMaster; i++)
          otherKey = `answering-${i}`;
        const stalled = cluster.servers.find((server) =>
          stalledMaster.endsWith(`:${server.port}`),
        )!;
        await stallable.consume(stalledKey, policy);

        await stalled.pause(1_500);
        const others = setInterval(() => void stallable.consume(otherKey, policy), 5);
        const lateness = watchTimerLateness();
        const startedAt = performance.now();
        const outcome = await stallable.consume(stalledKey, policy).then(
          () => 'answered',
          () => 'failed',
        );
        const ms = performance.now() - startedAt;
        clearInterval(others);
        const lateMs = lateness();
        console.log(
          `a decision on a stalled master while the others answer: ${outcome} after ${Math.round(ms)} ms`,
        );
        expect(outcome).toBe('failed');
        // At the deadline, not at maxWait (2 s): the other masters' answers are no signs of
        // this one's life. On GLIDE, which names no master, they are: the decision waits for
        // GLIDE's own request timeout (250 ms by default, under maxWait).
        expect(ms).toBeGreaterThanOrEqual(timeout - 1);
        expect(ms).toBeLessThanOrEqual(
          (namesMasters ? timeout : GLIDE_REQUEST_TIMEOUT_MS) + lateMs + 25,
        );
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      });

      it("names the master a decision's keys go to, from the client's own slot map (GLIDE: none)", async () => {
        const store = storeOnClient();
        for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
          const keys = [`${PREFIX}:{${key}}:x`, `${PREFIX}:{${key}}:y`];
          const master = admin.slots[await slotOf(keys[0])][0];
          expect(store.nodeOf(keys)).toBe(namesMasters ? master : undefined);
        }
        expect(store.nodeOf([`${PREFIX}:{a}:x`, `${PREFIX}:{b}:x`])).toBeUndefined();
      });

      it("reads Redis TIME as the latest of every master's clock", async () => {
        const nowOf = async (node: Redis) => timeMs(await node.time());
        const before = Math.max(...(await Promise.all(admin.nodes('master').map(nowOf))));
        const time = await storeOnClient().time();
        const after = Math.max(...(await Promise.all(admin.nodes('master').map(nowOf))));
        expect(time).toBeGreaterThanOrEqual(before);
        expect(time).toBeLessThanOrEqual(after);
      });

      it("reads one master's TIME, as nodeOf names it, from that master alone", async () => {
        const store = storeOnClient();
        // GLIDE names no master: the test's own slot map does.
        const nodeOfKey = async (key: string) =>
          store.nodeOf([`${PREFIX}:{${key}}:x`]) ?? admin.slots[await slotOf(`{${key}}`)][0];
        const stalledName = await nodeOfKey('node-time');
        let otherName = await nodeOfKey('node-time-0');
        for (let i = 1; otherName === stalledName; i++)
          otherName = await nodeOfKey(`node-time-${i}`);
        const stalled = cluster.servers.find((server) => stalledName.endsWith(`:${server.port}`))!;
        await stalled.pause(500);
        const pausedAt = performance.now();
        // Answered once it runs again, or failed by GLIDE at its request timeout.
        const settled = () => performance.now() - pausedAt;
        const stalledTime = store.nodeTime(stalledName).then(settled, settled);
        // The other master answers; the stalled one only once it runs again.
        expect(await store.nodeTime(otherName)).toBeGreaterThan(0);
        expect(await stalledTime).toBeGreaterThanOrEqual(
          namesMasters ? 400 : GLIDE_REQUEST_TIMEOUT_MS - 1,
        );
        // GLIDE routes to an address it does not know until its request timeout.
        await expect(store.nodeTime('127.0.0.1:1')).rejects.toThrow(
          namesMasters ? /no Redis Cluster master/ : /timed out/,
        );
      });

      it('spreads different clients over slots on every master', async () => {
        const written = await keysWrittenBy(() =>
          Promise.all(
            Array.from({ length: 60 }, (_, i) =>
              limiter.consume(`spread-${i}`, { limit: 1, window: WINDOW }),
            ),
          ),
        );
        expect(written).toHaveLength(60);
        const slots = new Set(await Promise.all(written.map(slotOf)));
        expect(slots.size).toBeGreaterThan(50);
        const perMaster = await Promise.all(
          admin
            .nodes('master')
            .map(async (node) => (await node.keys(`${PREFIX}:{spread-*`)).length),
        );
        expect(perMaster).toHaveLength(3);
        expect(perMaster.every((count) => count > 0)).toBe(true);
      });

      // Last: it restarts a master, which comes back empty.
      it('reloads its scripts after SCRIPT FLUSH on every master; fails within the deadline on a killed master, and decides again once it restarts (empty script cache)', async () => {
        const timeout = 100;
        const killable = new RateLimiter(
          resolveOptions({ prefix: PREFIX, failureMode: 'closed', breaker: false, timeout }),
          storeOnClient(),
        );
        const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 1_000, window: WINDOW };
        const key = 'flushed-then-killed';
        const remaining = async () => (await killable.consume(key, policy)).results[0].remaining;
        expect(await remaining()).toBe(999);
        await Promise.all(admin.nodes('master').map((node) => node.script('FLUSH')));
        expect(await remaining()).toBe(998);

        const master = admin.slots[await slotOf(`{${key}}`)][0];
        const killed = serverAt(master);
        await killed.kill();
        const lateness = watchTimerLateness();
        const startedAt = performance.now();
        const outcome = await killable.consume(key, policy).then(
          () => 'answered',
          () => 'failed',
        );
        const ms = performance.now() - startedAt;
        const lateMs = lateness();
        expect(outcome).toBe('failed');
        expect(ms).toBeLessThanOrEqual(timeout + lateMs + 25);

        // Back within cluster-node-timeout (2 s): not failed over, and without its keys.
        await killed.restart();
        const deadline = Date.now() + 10_000;
        let after: number | undefined;
        while (after === undefined && Date.now() < deadline) {
          after = await remaining().catch(() => undefined);
          if (after === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(after).toBe(999);
        // ioredis reconnects no lost Cluster node by itself: the test's own client looks at
        // all three masters again, for the suites after this one.
        while (admin.nodes('master').length < 3 && Date.now() < deadline) {
          await new Promise((resolve) => admin.refreshSlotsCache(() => resolve(undefined)));
        }
        expect(admin.nodes('master')).toHaveLength(3);
      });
    });
  }),
);
