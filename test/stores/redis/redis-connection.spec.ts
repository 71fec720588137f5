import { setTimeout as sleep } from 'node:timers/promises';
import { createHook } from 'node:async_hooks';
import type { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { awaitReady, createRedisClient } from '../../../lib/stores/redis/redis-connection.js';
import { clientPortOf } from '../../../lib/stores/redis/clients/client-port.js';
import { freePort } from '../../support/free-port.js';
import { type RedisServer, startRedisServer } from '../../support/redis-server.js';

/**
 * The start-up wait the README states: up to 2 s for Redis, then a warning with Redis' own
 * error (the failure tests show the app serving meanwhile). Lower bounds less the
 * millisecond a timer may fire early by performance.now(); the upper bound tells 2 s from a
 * longer wait (5 s, say) or a hang, with 2.5 s of room for timers late on a busy machine.
 */
const WAIT_MS = 2_000;
const EARLY_MS = 2;
const HANG_MS = 4_500;

const recording = () => {
  const warnings: string[] = [];
  return {
    warnings,
    logger: { warn: (message: string) => warnings.push(message) } as unknown as Logger,
  };
};

describe('the start-up wait for Redis', () => {
  let server: RedisServer | undefined;
  const clients: Redis[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.disconnect();
    await server?.stop();
    server = undefined;
  });

  it('waits 2 s for a Redis that does not answer, then warns with its error', async () => {
    const { warnings, logger } = recording();
    const started = performance.now();
    const client = await createRedisClient(`redis://127.0.0.1:${await freePort()}`, logger);
    clients.push(client);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(WAIT_MS - EARLY_MS);
    expect(waited).toBeLessThan(HANG_MS);
    expect(client.status).not.toBe('ready');
    expect(warnings).toEqual([
      expect.stringMatching(
        /^Redis is not reachable yet \(connect ECONNREFUSED 127\.0\.0\.1:\d+\); decisions fail \(see failureMode\) until it is\.$/,
      ),
    ]);
  });

  it('names the first error and, when the cause changed, the last one too', async () => {
    const { warnings, logger } = recording();
    server = await startRedisServer({ password: 'harness-secret' });
    const waiting = createRedisClient(`redis://:wrong@127.0.0.1:${server.port}`, logger);
    await sleep(500);
    await server.kill();
    clients.push(await waiting);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^Redis is not reachable yet \(WRONGPASS [^,]*, then connect ECONNREFUSED 127\.0\.0\.1:\d+\); /,
      ),
    ]);
  });

  it('goes on once Redis is ready, without a warning', async () => {
    const { warnings, logger } = recording();
    server = await startRedisServer();
    const client = await createRedisClient(server.url, logger);
    clients.push(client);
    expect(client.status).toBe('ready');
    expect(warnings).toEqual([]);
  });

  it('leaves no timer behind when the client it made is closed while Redis is down', async () => {
    const { logger } = recording();
    server = await startRedisServer();
    const client = await createRedisClient(server.url, logger);
    await server.kill();
    while (client.status === 'ready') await sleep(5);
    // ioredis arms a timer to destroy the socket, closed already, that nothing clears: with
    // its default it would run (and hold the process open) for 2 s. So the timers the
    // disconnect arms (at once, in the call) are seen as they are created, with their delay:
    // a count of the process's timers before and 400 ms after also saw others come and go,
    // and on a busy machine the 200 ms one could still be pending. `_idleTimeout` is Node's
    // delay of a Timeout (no public getter); Jest's own setTimeout is not the one ioredis
    // calls, so spying on it sees nothing.
    const delays: number[] = [];
    const arming = createHook({
      init: (_id, type, _trigger, timer) => {
        if (type === 'Timeout') delays.push((timer as { _idleTimeout: number })._idleTimeout);
      },
    }).enable();
    try {
      client.disconnect();
    } finally {
      arming.disable();
    }
    expect(delays).toEqual([200]);
  });

  it('gives a client the app owns the same wait, and leaves no listener on it', async () => {
    const { warnings, logger } = recording();
    // No 2 s socket timer left when it is closed between reconnects (see the test above).
    const client = new Redis(await freePort(), '127.0.0.1', {
      lazyConnect: true,
      disconnectTimeout: 0,
    });
    client.on('error', () => undefined);
    clients.push(client);
    const listeners = () => [client.listenerCount('error'), client.listenerCount('ready')];
    const before = listeners();
    const started = performance.now();
    await awaitReady(clientPortOf(client), logger);
    expect(performance.now() - started).toBeGreaterThanOrEqual(WAIT_MS - EARLY_MS);
    expect(warnings).toEqual([expect.stringMatching(/^Redis is not reachable yet \(/)]);
    expect(listeners()).toEqual(before);
  });
});

/**
 * The clients the module creates reconnect every 10-30 ms however long Redis was away, from a
 * URL and from options alike. ioredis' own default backs off to 2 s, which kept decisions off
 * a Redis that was back (a URL's client took 3.6-3.9 s after a 12 s outage).
 */
describe('reconnecting after an outage', () => {
  /** Long enough for ioredis' default backoff to reach its 2 s cap (50 ms more per try). */
  const OUTAGE_MS = 3_000;
  /** 30 ms of backoff at most, the ready check, and timers late on a busy machine. */
  const BACK_WITHIN_MS = 400;
  let server: RedisServer;
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(() => server.stop());

  it.each([
    ['a URL', (url: string) => url],
    ['options', (url: string) => ({ port: Number(new URL(url).port), host: '127.0.0.1' })],
  ])(
    'a client made from %s is ready within a few backoff steps of Redis coming back',
    async (_, option) => {
      const { logger } = recording();
      const client = await createRedisClient(option(server.url), logger);
      try {
        await server.kill();
        await sleep(OUTAGE_MS);
        await server.restart();
        const back = performance.now();
        while (client.status !== 'ready') {
          if (performance.now() - back > 5_000) throw new Error(`still ${client.status}`);
          await sleep(5);
        }
        expect(performance.now() - back).toBeLessThan(BACK_WITHIN_MS);
        await expect(client.ping()).resolves.toBe('PONG');
        // However many tries an outage takes, the next one is at most 30 ms away.
        const delays = Array.from({ length: 500 }, (_, i) =>
          Number(client.options.retryStrategy!(i + 1)),
        );
        expect(Math.min(...delays)).toBeGreaterThanOrEqual(10);
        expect(Math.max(...delays)).toBeLessThanOrEqual(30);
        expect(new Set(delays).size).toBeGreaterThan(1);
      } finally {
        client.disconnect();
      }
    },
    15_000,
  );

  it('keeps a retryStrategy the options set', async () => {
    const { logger } = recording();
    const retryStrategy = () => 1_234;
    const client = await createRedisClient({ port: server.port, retryStrategy }, logger);
    try {
      expect(client.options.retryStrategy).toBe(retryStrategy);
    } finally {
      client.disconnect();
    }
  });
});
