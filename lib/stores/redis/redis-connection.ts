import type { Logger } from '@nestjs/common';
import type { Redis, RedisOptions } from 'ioredis';
import { RateLimitConfigError } from '../../config/rate-limit-config.error.js';
import type { RedisConnectionOptions } from '../../interfaces/redis-client.interface.js';
import { clientPortOf } from './clients/client-port.js';
import type { RedisClientPort } from './clients/redis-client-port.js';

/**
 * How long start-up waits for a client's first connection, and then for the server's answer
 * to the scripting check, before serving anyway.
 */
const CONNECT_WAIT_MS = 2_000;

/** The scripting check's script: no key, no write, nothing left but its SHA in the cache. */
const SCRIPTING_CHECK = 'return 1';
/**
 * How long a disconnect waits for the socket to close before destroying it (ioredis: 2 s).
 * ioredis arms that timer even for a socket that closed already (Redis went down and the
 * client is between reconnects), and then nothing clears it: closing the app while Redis
 * is down held the process open for the whole 2 s.
 */
const DISCONNECT_WAIT_MS = 200;

/** Around this many ms between reconnect attempts while Redis is away (see reconnectDelay). */
const RECONNECT_MS = 20;

/**
 * ioredis' retryStrategy for the clients the module creates, from a URL and from options
 * alike: a try every 10-30 ms however long the outage, so decisions are back on Redis within
 * about that long after it accepts commands again (ioredis' own default backs off to 2 s). A
 * refused try costs a pod next to nothing; a longer wait made a recovery within 100 ms
 * depend on luck once the pod's timers ran late.
 * The jitter keeps a fleet of pods from reconnecting in step. Options that set their own
 * retryStrategy keep it.
 */
export const reconnectDelay = (): number => RECONNECT_MS * (0.5 + Math.random());

/**
 * Creates the client for a URL or options. It fails fast instead of queueing: no offline
 * queue, no per-command retries; it reconnects in the background, so Redis coming back
 * needs no restart. Start-up waits briefly for it but never fails for it, only for a server
 * without scripting (awaitReady), and then closes it.
 */
export async function createRedisClient(
  option: string | RedisConnectionOptions,
  logger: Logger,
): Promise<Redis> {
  const { Redis } = await loadIoredis();
  const defaults: RedisOptions = {
    retryStrategy: reconnectDelay,
    disconnectTimeout: DISCONNECT_WAIT_MS,
  };
  const failFast: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
  };
  const client =
    typeof option === 'string'
      ? new Redis(option, { ...defaults, ...failFast })
      : new Redis({ ...defaults, ...(option as RedisOptions), ...failFast });
  // Without a listener ioredis reports every failed reconnect as an unhandled error.
  client.on('error', () => undefined);
  const port = clientPortOf(client);
  try {
    await awaitReady(port, logger);
  } catch (error) {
    await port.close();
    throw error;
  }
  return client;
}

/**
 * ioredis, loaded only when the module creates a client: it is an optional peer, and an app
 * on the embedded store (or a client of its own) need not install it.
 */
async function loadIoredis(): Promise<{ Redis: typeof Redis }> {
  try {
    return await import('ioredis');
  } catch (error) {
    throw new RateLimitConfigError(
      'Invalid RateLimitModule option redis: a URL or options need the ioredis package ' +
        `(npm install ioredis): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * Waits up to CONNECT_WAIT_MS for the client to be ready, and warns with the errors it
 * reported (WRONGPASS, NOPERM, a certificate) if it is not: the first, which names the cause
 * best (under load a later try against a TLS port with an unknown CA failed with a bare
 * 'alert decode error' instead), and the last, if it differs, as the state now. Requests
 * then take the failure mode at once (the store sends nothing on a client that is not
 * ready) until it is. Leaves no listener behind, so a client the user owns keeps its own
 * error handling. Once ready, checks that the server runs scripts (assertScripting).
 */
export async function awaitReady(client: RedisClientPort, logger: Logger): Promise<void> {
  if (await connected(client, logger)) await assertScripting(client);
}

/** Whether the client is ready, waiting up to CONNECT_WAIT_MS; warns if it is not. */
async function connected(client: RedisClientPort, logger: Logger): Promise<boolean> {
  if (client.isReady()) return true;
  // A lazyConnect client would otherwise never connect: fast failure sends it no command.
  client.connectIfLazy();
  let firstError: Error | undefined;
  let lastError: Error | undefined;
  const offError = client.onError((error: Error) => {
    firstError ??= error;
    lastError = error;
  });
  let offReady = (): void => undefined;
  const ready = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), CONNECT_WAIT_MS);
    // A Cluster's node may be ready before the Cluster is.
    offReady = client.onReady(() => {
      if (!client.isReady()) return;
      clearTimeout(timer);
      resolve(true);
    });
  });
  const isReady = client.hasEnded() ? false : await ready;
  offError();
  offReady();
  if (!isReady) {
    const causes = [firstError?.message, lastError?.message].filter((cause) => cause);
    const cause = causes.length ? ` (${[...new Set(causes)].join(', then ')})` : '';
    logger.warn(
      `Redis is not reachable yet${cause}; decisions fail (see failureMode) until it is.`,
    );
  }
  return isReady;
}

/**
 * Fails the start with a RateLimitConfigError on a server without Lua scripting (Valkey can be
 * built without it, and a provider can rename EVAL away): there EVAL is an unknown command,
 * and every decision, one script, would fail, failing open or closed on every request. Any
 * other answer, an error or none within CONNECT_WAIT_MS (a server that stalls, or goes
 * away), starts the app as before: decisions then show what is wrong.
 */
async function assertScripting(client: RedisClientPort): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failure = await Promise.race([
    client.script('eval', [SCRIPTING_CHECK, 0]).then(
      () => undefined,
      (error: unknown) => error,
    ),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), CONNECT_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (failure instanceof Error && /unknown command/i.test(failure.message)) {
    throw new RateLimitConfigError(
      `${client.describe()} runs no Lua scripts (EVAL: ${failure.message}); every rate-limit ` +
        'decision is one. Use a server with scripting: Redis 7, or Valkey 8 built with Lua.',
    );
  }
}
