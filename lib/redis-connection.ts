import { Logger } from '@nestjs/common';
import { type Cluster, Redis, type RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;

/** A client the user owns (Redis or Cluster), told apart from a URL or options object. */
export function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RedisClient).defineCommand === 'function' &&
    typeof (value as RedisClient).sendCommand === 'function'
  );
}

/** How long start-up waits for a created client's first connection before serving anyway. */
const CONNECT_WAIT_MS = 2_000;

/**
 * Creates the client for a URL or options. It fails fast instead of queueing: no offline
 * queue, no per-command retries; it reconnects in the background, so Redis coming back
 * needs no restart. Start-up waits briefly for it but never fails for it.
 */
export async function createRedisClient(
  option: string | RedisOptions,
  logger: Logger,
): Promise<Redis> {
  const failFast: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
  };
  const client =
    typeof option === 'string'
      ? new Redis(option, failFast)
      : new Redis({
          retryStrategy: (times) => Math.min(times * 100, 2_000),
          ...option,
          ...failFast,
        });
  // Without a listener ioredis reports every failed reconnect as an unhandled error. The last
  // one names the cause (WRONGPASS, NOPERM, a certificate) in the start-up warning.
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error;
  });
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), CONNECT_WAIT_MS);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  if (!ready) {
    const cause = lastError ? ` (${lastError.message})` : '';
    logger.warn(
      `Redis is not reachable yet${cause}; decisions fail (see failureMode) until it is.`,
    );
  }
  return client;
}
