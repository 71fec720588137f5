import type { EventEmitter } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { describeOnServers } from '../support/redis-fixture.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';
import type { ServerKind } from '../support/server-kinds.js';

// Unlike events.once(), ignores 'error': reconnect attempts emit ECONNREFUSED while waiting.
function nextEvent(emitter: EventEmitter, name: string): Promise<void> {
  return new Promise((resolve) => emitter.once(name, () => resolve()));
}

/** What INFO server says of the server that answers: Valkey names itself, Redis 7.0 does not. */
const SERVER_INFO: Record<ServerKind, RegExp> = {
  redis: /^(?![\s\S]*valkey)[\s\S]*^redis_version:7\./m,
  valkey: /^valkey_version:8\.0\.1\r?$/m,
};

describeOnServers((server) =>
  describe('real server launchers', () => {
    describe('standalone', () => {
      let redisServer: RedisServer;
      let client: Redis;

      beforeAll(async () => {
        redisServer = await startRedisServer({ server });
        client = new Redis(redisServer.port, '127.0.0.1', {
          // Fail fast while the server is down instead of queueing for ~20 reconnects.
          maxRetriesPerRequest: 0,
          enableOfflineQueue: false,
          retryStrategy: () => 50,
        });
        // Reconnect attempts while the server is down emit 'error'; unhandled they are just logged.
        client.on('error', () => undefined);
        await nextEvent(client, 'ready');
      });

      afterAll(async () => {
        client?.disconnect();
        await redisServer?.stop();
      });

      it(`is ${server}, and serves SET/GET on its own port, not 6379`, async () => {
        expect(redisServer.kind).toBe(server);
        expect(await client.info('server')).toMatch(SERVER_INFO[server]);
        expect(redisServer.port).not.toBe(6379);
        expect(redisServer.url).toBe(`redis://127.0.0.1:${redisServer.port}`);
        await client.set('greeting', 'hello');
        await expect(client.get('greeting')).resolves.toBe('hello');
      });

      it('fails commands after kill() and works again on the same port after restart()', async () => {
        const port = redisServer.port;
        const closed = nextEvent(client, 'close');
        await redisServer.kill();
        await closed;
        await expect(client.get('greeting')).rejects.toThrow();

        const ready = nextEvent(client, 'ready');
        await redisServer.restart();
        await ready;
        expect(redisServer.port).toBe(port);
        // Nothing is persisted, so the restarted server starts empty.
        await expect(client.get('greeting')).resolves.toBeNull();
        await client.set('greeting', 'again');
        await expect(client.get('greeting')).resolves.toBe('again');
      });
    });

    describe('cluster', () => {
      let cluster: RedisClusterHandle;
      let client: Cluster;

      beforeAll(async () => {
        cluster = await startRedisCluster(3, { server });
        client = new Cluster(cluster.nodes);
        await nextEvent(client, 'ready');
      });

      afterAll(async () => {
        client?.disconnect();
        await cluster?.stop();
      });

      it(`spreads keys with different hash tags over several ${server} masters`, async () => {
        expect(cluster.nodes).toHaveLength(3);
        for (const node of client.nodes('master'))
          expect(await node.info('server')).toMatch(SERVER_INFO[server]);
        const keys = Array.from({ length: 20 }, (_, i) => `{tag-${i}}:key`);
        for (const key of keys) await client.set(key, `value of ${key}`);
        for (const key of keys) await expect(client.get(key)).resolves.toBe(`value of ${key}`);

        const sizes = await Promise.all(client.nodes('master').map((node) => node.dbsize()));
        expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(keys.length);
        expect(sizes.filter((size) => size > 0).length).toBeGreaterThan(1);
      });
    });
  }),
);
