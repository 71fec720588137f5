import type { EventEmitter } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

// Unlike events.once(), ignores 'error': reconnect attempts emit ECONNREFUSED while waiting.
function nextEvent(emitter: EventEmitter, name: string): Promise<void> {
  return new Promise((resolve) => emitter.once(name, () => resolve()));
}

describe('real redis-server launchers', () => {
  describe('standalone', () => {
    let server: RedisServer;
    let client: Redis;

    beforeAll(async () => {
      server = await startRedisServer();
      client = new Redis(server.port, '127.0.0.1', {
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
      await server?.stop();
    });

    it('serves SET/GET on its own port, not 6379', async () => {
      expect(server.port).not.toBe(6379);
      expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
      await client.set('greeting', 'hello');
      await expect(client.get('greeting')).resolves.toBe('hello');
    });

    it('fails commands after kill() and works again on the same port after restart()', async () => {
      const port = server.port;
      const closed = nextEvent(client, 'close');
      await server.kill();
      await closed;
      await expect(client.get('greeting')).rejects.toThrow();

      const ready = nextEvent(client, 'ready');
      await server.restart();
      await ready;
      expect(server.port).toBe(port);
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
      cluster = await startRedisCluster(3);
      client = new Cluster(cluster.nodes);
      await nextEvent(client, 'ready');
    });

    afterAll(async () => {
      client?.disconnect();
      await cluster?.stop();
    });

    it('spreads keys with different hash tags over several masters', async () => {
      expect(cluster.nodes).toHaveLength(3);
      const keys = Array.from({ length: 20 }, (_, i) => `{tag-${i}}:key`);
      for (const key of keys) await client.set(key, `value of ${key}`);
      for (const key of keys) await expect(client.get(key)).resolves.toBe(`value of ${key}`);

      const sizes = await Promise.all(client.nodes('master').map((node) => node.dbsize()));
      expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(keys.length);
      expect(sizes.filter((size) => size > 0).length).toBeGreaterThan(1);
    });
  });
});
