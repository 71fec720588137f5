import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

/**
 * The peers' fixed windows, through their own code (what they send is what counts), for the
 * decide benches' fixed-window row: one call per client key, limit and window as given.
 * `close` releases the client @nest-lab creates for itself from `redisUrl`.
 */
export function peerFixedWindows(
  client: Redis,
  redisUrl: string,
  clientOptions: { enableAutoPipelining: boolean },
  limit: number,
  windowMs: number,
) {
  const flexible = new RateLimiterRedis({
    storeClient: client,
    points: limit,
    duration: windowMs / 1000,
    keyPrefix: 'rlf',
  });
  const throttler = new ThrottlerStorageRedisService(redisUrl, clientOptions);
  return {
    variants: {
      'rate-limiter-flexible': (key: string) => flexible.consume(key),
      '@nest-lab/throttler-storage-redis': (key: string) =>
        throttler.increment(key, windowMs, limit, windowMs, 'default'),
    } as Record<string, (key: string) => Promise<unknown>>,
    close: () => throttler.onModuleDestroy(),
  };
}
