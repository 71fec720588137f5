import { RedisThrottlerStorage } from '../../lib/throttler/index.js';
import { clientPortOf } from '../../lib/stores/redis/clients/client-port.js';
import { clientOf, REDIS_CLIENTS } from '../support/redis-clients.js';
import { useRedisServer } from '../support/redis-fixture.js';

const MINUTE = 60_000;

/** The storage through every client library the package supports, as the app made it. */
describe.each(REDIS_CLIENTS)('RedisThrottlerStorage on a %s client', (name) => {
  const redis = useRedisServer();

  it('counts hits, reloads its script after SCRIPT FLUSH, and leaves the client open', async () => {
    const made = await clientOf(name, redis.server.url);
    await made.ready();
    try {
      const storage = new RedisThrottlerStorage(made.client, { prefix: 'th' });
      await storage.onModuleInit();
      const hits = [];
      for (let i = 0; i < 2; i++) {
        hits.push((await storage.increment('k', MINUTE, 3, 0, 'default')).totalHits);
      }
      await redis.admin.script('FLUSH');
      hits.push((await storage.increment('k', MINUTE, 3, 0, 'default')).totalHits);
      const past = await storage.increment('k', MINUTE, 3, 0, 'default');
      expect([...hits, past.totalHits]).toEqual([1, 2, 3, 4]);
      expect(past.isBlocked).toBe(true);
      await storage.onApplicationShutdown();
      expect(clientPortOf(made.client).isReady()).toBe(true);
    } finally {
      await made.close();
    }
  });
});
