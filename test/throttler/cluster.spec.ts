import { Cluster } from 'ioredis';
import { RedisThrottlerStorage } from '../../lib/throttler/index.js';
import { throttlerKeys } from '../../lib/throttler/throttler-keys.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';

/** One increment touches two keys: on Redis Cluster they must share a slot, whatever the key. */
describe('RedisThrottlerStorage on Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  let client: Cluster;
  let storage: RedisThrottlerStorage;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    client = new Cluster(cluster.nodes);
    await new Promise((resolve) => client.once('ready', resolve));
    storage = new RedisThrottlerStorage(client, { prefix: 'cl' });
    await storage.onModuleInit();
  }, 60_000);
  afterAll(async () => {
    client.disconnect();
    await cluster.stop();
  });

  it('counts and blocks keys of every shape, spread over the masters, each increment in one slot', async () => {
    const keys = [
      ...Array.from({ length: 12 }, (_, i) => `client-${i}`),
      '}{',
      'x'.repeat(5_000),
      'ключ',
      '\ud800',
    ];
    for (const key of keys) {
      const answers = [];
      for (let i = 0; i < 3; i++)
        answers.push(await storage.increment(key, 60_000, 2, 60_000, 'n{}'));
      expect(answers.map(({ totalHits, isBlocked }) => [totalHits, isBlocked])).toEqual([
        [1, false],
        [2, false],
        [3, true],
      ]);
    }
    const slots = await Promise.all(
      keys.map(async (key) => {
        const { record, hits } = throttlerKeys('cl', key, 'n{}');
        const [recordSlot, hitsSlot] = await Promise.all([
          client.cluster('KEYSLOT', record),
          client.cluster('KEYSLOT', hits),
        ]);
        expect(hitsSlot).toBe(recordSlot);
        return Number(recordSlot);
      }),
    );
    // The keys landed in more than one master's range (each master holds a third of the slots).
    expect(new Set(slots.map((slot) => Math.floor(slot / 5_462))).size).toBeGreaterThan(1);
  });
});
