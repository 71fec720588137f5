import { Controller, Get, Logger, type LoggerService } from '@nestjs/common';
import { Decoder, GlideClient } from '@valkey/valkey-glide';
import * as nodeRedis6 from 'redis';
import * as nodeRedis5 from 'redis5';
import type { RedisClientLike } from '../../../lib/interfaces/redis-client.interface.js';
import {
  RATE_LIMIT_REDIS,
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  type RateLimitPolicy,
  type RateLimitDecision,
  RateLimitUnavailableException,
} from '../../../lib/index.js';
import { RateLimiter } from '../../../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../../../lib/config/resolved-options.js';
import { RedisStore } from '../../../lib/stores/redis/redis.store.js';
import { clientPortOf } from '../../../lib/stores/redis/clients/client-port.js';
import {
  type ClientUnderTest,
  clientOf,
  CLIENTS_ON,
  type RedisClientName,
} from '../../support/redis-clients.js';
import { describeOnServers, useRedisServer } from '../../support/redis-fixture.js';
import { untilWindowHasRoom } from '../../support/redis-server.js';
import { byClientHeader, sequentially, startApp } from '../../support/test-app.js';
import { watchTimerLateness } from '../../support/timer-lateness.js';

/** The deadline the tests hold each client to: the module's default. */
const TIMEOUT_MS = 100;
/**
 * The cap on a decision, however late this process is (a busy process gets a deadline more,
 * up to this): under the 1.5 s a stopped Redis stays silent, which a command the client kept
 * for its own retries or queue would wait out.
 */
const MAX_WAIT_MS = 1_000;
/** The turns from the cap's timer to the rejection. */
const SETTLE_MS = 25;
const POLICY: RateLimitPolicy = { algorithm: 'fixed-window', limit: 1_000, window: '1h' };
/**
 * Whether the client tells a closed connection (its state, its events): the store then
 * refuses at once. GLIDE tells neither: a command waits for its reconnect.
 */
const REPORTS_DISCONNECTS: Record<RedisClientName, boolean> = {
  'ioredis 6': true,
  'ioredis 5': true,
  iovalkey: true,
  'node-redis 6': true,
  'node-redis 5': true,
  'Valkey GLIDE': false,
};

/**
 * How long `work` took to settle, whether it was refused as unavailable, and the store's
 * error that made it so (the exception's cause).
 */
async function timed(
  work: Promise<unknown>,
): Promise<{ ms: number; unavailable: boolean; cause?: string }> {
  const started = performance.now();
  const refusal = await work.then(
    () => undefined,
    (error: unknown) => error,
  );
  const unavailable = refusal instanceof RateLimitUnavailableException;
  const cause = unavailable ? String((refusal.cause as Error | undefined)?.message) : undefined;
  return { ms: performance.now() - started, unavailable, cause };
}

/** Polls until a decision is made on Redis again; how long that took. */
async function untilDeciding(limiter: RateLimiter, withinMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const ok = await limiter.consume('back', POLICY).then(
      () => true,
      () => false,
    );
    if (ok) return performance.now() - started;
    if (performance.now() - started > withinMs) throw new Error(`not back in ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * What differs between client libraries beyond the algorithms (test/stores/algorithms.spec.ts
 * and redis.store.spec.ts run those through every client): a client as an app makes it, with
 * its library's own retry and offline-queue defaults, held to the deadline on a stopped and
 * on a killed Redis, decisions after a restart, its key prefix, and the module never closing
 * it. On Valkey too, through the clients CLIENTS_ON names for it.
 */
/**
 * Decides 4 requests on two policies whose resets and retries are fractions of a ms (a clock
 * at .25 ms: the script replies with them as strings, "333.25") and checks the numbers;
 * returns the decisions.
 */
async function decidesWithFractions(client: RedisClientLike): Promise<RateLimitDecision[]> {
  const limiter = new RateLimiter(
    resolveOptions({ clock: () => 1_700_000_000_000.25 }),
    new RedisStore(client, false),
  );
  const policies: RateLimitPolicy[] = [
    { name: 'a', algorithm: 'token-bucket', limit: 3, window: 1_000.5 },
    { name: 'b', algorithm: 'sliding-window-counter', limit: 5, window: '1h' },
  ];
  const decisions = [];
  for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('fractions', policies));
  expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true, false]);
  expect(decisions[2].results.map((result) => result.remaining)).toEqual([0, 2]);
  const [bucket] = decisions[3].results;
  expect(bucket.retryAfterMs).toBeGreaterThan(0);
  expect(bucket.retryAfterMs).toBeLessThanOrEqual(333.5);
  return decisions;
}

describeOnServers((server) =>
  describe.each(CLIENTS_ON[server])('a %s client the app made', (name: RedisClientName) => {
    // A server per client: these tests stop, kill and restart it.
    const redis = useRedisServer({ server });
    let made: ClientUnderTest;
    let limiter: RateLimiter;
    beforeAll(() => Logger.overrideLogger(false));
    beforeEach(async () => {
      made = await clientOf(name, redis.server.url);
      await made.ready();
      limiter = new RateLimiter(
        resolveOptions({ timeout: TIMEOUT_MS, maxWait: MAX_WAIT_MS, breaker: false }),
        new RedisStore(made.client, false),
      );
      await limiter.consume('warm-up', POLICY);
    });
    afterEach(() => made.close());

    it('fails a decision on a stopped (SIGSTOP) Redis at the deadline, and decides again once it wakes', async () => {
      await redis.server.pause(1_500);
      const lateness = watchTimerLateness();
      // Together: each settles by the cap, all before Redis wakes.
      const during = await Promise.all(
        Array.from({ length: 3 }, () => timed(limiter.consume('stopped', POLICY))),
      );
      const lateMs = lateness();
      for (const decision of during) {
        expect(decision.unavailable).toBe(true);
        expect(decision.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
        expect(decision.ms).toBeLessThan(MAX_WAIT_MS + lateMs + SETTLE_MS);
      }
      await untilDeciding(limiter, 5_000);
    });

    it('fails while Redis is dead, never past the deadline, and decides again after its restart (empty script cache)', async () => {
      await redis.server.kill();
      // Past the drop itself: the client has seen the socket close.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const lateness = watchTimerLateness();
      const during = [];
      for (let i = 0; i < 5; i++) during.push(await timed(limiter.consume('killed', POLICY)));
      const lateMs = lateness();
      for (const decision of during) {
        expect(decision.unavailable).toBe(true);
        if (REPORTS_DISCONNECTS[name]) {
          // Refused, not queued until the deadline.
          expect(decision.ms).toBeLessThan(TIMEOUT_MS / 2);
        } else {
          // GLIDE holds the command for its reconnect, up to its own 250 ms: the deadline rules.
          expect(decision.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
          expect(decision.ms).toBeLessThan(TIMEOUT_MS + lateMs + SETTLE_MS);
        }
      }
      await redis.server.restart();
      // The client's own reconnect backoff: ioredis 50 ms more per try, node-redis up to 500 ms.
      await untilDeciding(limiter, 5_000);
      await untilWindowHasRoom(redis.admin, 3_600_000);
      const first = await limiter.consume('after-restart', POLICY);
      const second = await limiter.consume('after-restart', POLICY);
      expect([first.results[0].remaining, second.results[0].remaining]).toEqual([999, 998]);
    });

    it('reloads its scripts after SCRIPT FLUSH, on a connection that knew them', async () => {
      await untilWindowHasRoom(redis.admin, 3_600_000);
      await limiter.consume('flushed', POLICY);
      await redis.admin.script('FLUSH');
      const again = await limiter.consume('flushed', POLICY);
      expect(again.results[0].remaining).toBe(998);
    });

    it('is provided as given, logged by where it decides, and never closed by the module', async () => {
      @Controller()
      class LimitedController {
        @Get()
        @RateLimit({ algorithm: 'fixed-window', limit: 3, window: '1h' })
        limited() {
          return 'ok';
        }
      }
      const logs: string[] = [];
      const logger: LoggerService = {
        log: (message: unknown) => logs.push(String(message)),
        warn: () => undefined,
        error: () => undefined,
      };
      await untilWindowHasRoom(redis.admin, 3_600_000);
      const app = await startApp(
        'express',
        [RateLimitModule.forRoot({ redis: made.client, keyBy: byClientHeader })],
        [LimitedController],
        // The module logs while it compiles, before the app's own logger is set.
        { logger, customize: (builder) => builder.setLogger(logger) },
      );
      try {
        expect(app.app.get(RATE_LIMIT_REDIS)).toBe(made.client);
        expect(await sequentially(4, () => app.get('/', 'owned'))).toEqual([200, 200, 200, 429]);
        expect(logs).toContain(`Deciding on Redis at 127.0.0.1:${redis.server.port}`);
      } finally {
        await app.close();
      }
      const port = clientPortOf(made.client);
      expect(port.isReady()).toBe(true);
      await expect(port.masterTimes()).resolves.toHaveLength(1);
    });
  }),
);

describe.each(['ioredis 6', 'iovalkey', 'node-redis 6'] as const)(
  "a %s client's key prefix",
  (name) => {
    const redis = useRedisServer();
    it('goes before every key the store writes and resets, as its own commands would', async () => {
      const made = await clientOf(name, redis.server.url, { keyPrefix: 'tenant:' });
      await made.ready();
      try {
        const store = new RedisStore(made.client, false);
        const limiter = new RateLimiter(resolveOptions({ prefix: 'app1' }), store);
        const policy: RateLimitPolicy = { algorithm: 'token-bucket', limit: 5, window: '1h' };
        await limiter.consume('user-1', policy);
        expect((await limiter.consume('user-1', policy)).results[0].remaining).toBe(3);
        expect(await redis.admin.keys('*')).toEqual([
          expect.stringMatching(/^tenant:app1:\{user-1\}:/),
        ]);
        await limiter.reset('user-1', policy);
        expect(await redis.admin.keys('*')).toEqual([]);
      } finally {
        await made.close();
      }
    });
  },
);

describe.each([
  ['node-redis 6', nodeRedis6 as unknown as typeof nodeRedis5],
  ['node-redis 5', nodeRedis5],
])('a %s client on RESP3 with a type mapping of its own', (_, library) => {
  const redis = useRedisServer();
  it('decides with the same numbers: replies are read as plain strings and numbers', async () => {
    const client = library.createClient({ url: redis.server.url, RESP: 3 }).withTypeMapping({
      [library.RESP_TYPES.BLOB_STRING]: Buffer,
      [library.RESP_TYPES.NUMBER]: String,
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const decisions = await decidesWithFractions(client as unknown as RedisClientLike);
      for (const { results } of decisions) {
        for (const result of results) {
          for (const field of ['remaining', 'resetMs', 'retryAfterMs'] as const) {
            expect(Number.isFinite(result[field])).toBe(true);
          }
        }
      }
    } finally {
      client.destroy();
    }
  });
});

describe('a Valkey GLIDE client with its own defaults', () => {
  const redis = useRedisServer();
  beforeAll(() => Logger.overrideLogger(false));
  const glideOn = (options: { defaultDecoder?: Decoder } = {}) =>
    GlideClient.createClient({
      addresses: [{ host: '127.0.0.1', port: redis.server.port }],
      ...options,
    });

  it('decides with the same numbers whatever its default decoder: replies come as strings', async () => {
    const client = await glideOn({ defaultDecoder: Decoder.Bytes });
    try {
      await decidesWithFractions(client);
      const time = await new RedisStore(client, false).time();
      expect(Math.abs(time - Date.now())).toBeLessThan(5_000);
      // The port's contract: string replies, not the Buffers this client decodes to.
      const reply = await clientPortOf(client).script('eval', ["return {1, '333.25'}", 0]);
      expect(reply).toEqual([1, '333.25']);
    } finally {
      client.close();
    }
  });

  it('fails decisions past its in-flight cap (1,000) as store failures, and decides again after', async () => {
    const client = await glideOn();
    try {
      const limiter = new RateLimiter(
        resolveOptions({ timeout: TIMEOUT_MS, maxWait: MAX_WAIT_MS, breaker: false }),
        new RedisStore(client, false),
      );
      await limiter.consume('warm-up', POLICY);
      await redis.server.pause(1_500);
      const lateness = watchTimerLateness();
      const decisions = await Promise.all(
        Array.from({ length: 1_100 }, (_, i) => timed(limiter.consume(`capped-${i}`, POLICY))),
      );
      const lateMs = lateness();
      expect(decisions.every((decision) => decision.unavailable)).toBe(true);
      // Those past the cap refused by GLIDE, in its words; the others given up at the deadline.
      // Not exactly 100: on a loaded machine a slot may free before the last ones are sent.
      const refusedByCap = decisions.filter(({ cause }) =>
        /maximum inflight requests/.test(cause!),
      );
      expect(refusedByCap.length).toBeGreaterThan(0);
      for (const { ms } of decisions) expect(ms).toBeLessThan(MAX_WAIT_MS + lateMs + SETTLE_MS);
      await untilDeciding(limiter, 5_000);
    } finally {
      client.close();
    }
  });
});

describe('a node-redis Sentinel client', () => {
  it('fails the start with a RateLimitConfigError: its commands take another form than a client’s', async () => {
    const sentinel = nodeRedis6.createSentinel({
      name: 'mymaster',
      sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }],
    });
    const starting = startApp('express', [RateLimitModule.forRoot({ redis: sentinel })], []);
    await expect(starting).rejects.toThrow(RateLimitConfigError);
    await expect(starting).rejects.toThrow(/node-redis Sentinel/);
  });
});
