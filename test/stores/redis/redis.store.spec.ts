import { once } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import { type Algorithm, ALGORITHMS, type RateLimitPolicy } from '../../../lib/index.js';
import { RateLimiter } from '../../../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import { RedisStore } from '../../../lib/stores/redis/redis.store.js';
import { LimiterFixture, storeKindsOn, VirtualClock } from '../../support/limiters.js';
import { fixedWindowState, integerState } from './fixed-window-state.js';
import { describeOnServers, useRedisServer } from '../../support/redis-fixture.js';
import { redisNowMs, untilWindowHasRoom } from '../../support/redis-server.js';

/**
 * What only the Redis store can get wrong: keys, expiries, script loading and Redis time, on
 * each server.
 */
describeOnServers((server) =>
  describe('Redis store', () => {
    const redis = useRedisServer({ server });
    beforeEach(() => redis.admin.flushall());

    describe.each(storeKindsOn(server))('on the Redis clock, through %s', (kind) => {
      let fixture: LimiterFixture;
      beforeAll(async () => {
        fixture = await new LimiterFixture(kind, redis.server.url, { prefix: 'app1' }).ready();
      });
      afterAll(() => fixture.close());

      /**
       * When each algorithm's key stops mattering after one request of cost 2 on a fresh key
       * (limit 5 per 10 s, burst 5), as an instant on the Redis clock, given the decision's
       * time t: the buckets refill or drain the 2 units in 2 * 10 s / 5 = 4 s; the log's
       * newest entry leaves the window after 10 s; the fixed window's count dies with its
       * window; the sliding counter's weighs in through the next window too.
       */
      const expiresAt: Record<Algorithm, (t: number) => number> = {
        'token-bucket': (t) => t + 4_000,
        'leaky-bucket': (t) => t + 4_000,
        'sliding-window-log': (t) => t + 10_000,
        'fixed-window': (t) => (Math.floor(t / 10_000) + 1) * 10_000,
        'sliding-window-counter': (t) => (Math.floor(t / 10_000) + 2) * 10_000,
      };

      it.each(ALGORITHMS)(
        '%s: the one key it writes expires exactly when its state stops mattering',
        async (algorithm) => {
          const policy: RateLimitPolicy = { algorithm, limit: 5, window: '10s', burst: 5 };
          const before = await redisNowMs(redis.admin);
          await fixture.limiter.consume('user-1', policy, 2);
          const keys = await redis.admin.keys('*');
          expect(keys).toEqual([expect.stringMatching(/^app1:\{user-1\}:default:/)]);
          const ttl = await redis.admin.pttl(keys[0]);
          const after = await redisNowMs(redis.admin);
          // The decision and the PTTL both happened within [before, after] on the Redis
          // clock, so the TTL is pinned to within that span (a few ms) plus 1 ms of rounding.
          expect(ttl).toBeGreaterThanOrEqual(expiresAt[algorithm](before) - after - 1);
          expect(ttl).toBeLessThanOrEqual(expiresAt[algorithm](after) - before + 1);
        },
      );

      it('keeps every key of a decision in one hash tag and under 256 bytes, whatever the client key', async () => {
        const policies: RateLimitPolicy[] = [
          { name: 'a', algorithm: 'sliding-window-log', limit: 5, window: '1m' },
          { name: 'b', algorithm: 'token-bucket', limit: 5, window: '1m' },
        ];
        const hostile = [
          '}{evil}',
          'line\nbreak',
          'x'.repeat(10_000),
          'ünïcødé ☃',
          '#fake-hash',
          '',
        ];
        for (const clientKey of hostile) await fixture.limiter.consume(clientKey, policies);
        const keys = await redis.admin.keys('*');
        expect(keys).toHaveLength(hostile.length * policies.length);
        const tags = new Set<string>();
        for (const key of keys) {
          expect(Buffer.byteLength(key)).toBeLessThan(256);
          const tag = /^app1:\{([^{}]+)\}:[ab]:/.exec(key)?.[1];
          expect(tag).toBeDefined();
          tags.add(tag!);
        }
        expect(tags.size).toBe(hostile.length);
      });

      describe('with Date.now() hours off', () => {
        /** Not a multiple of any window below, so a wrong clock shows in every number. */
        const SKEW_MS = -5.5 * 3_600_000;
        const realNow = Date.now;
        let skewed: LimiterFixture;
        // Stubbed before the limiter exists, so that even a reference taken at construction
        // would be the stub.
        beforeAll(async () => {
          Date.now = () => realNow() + SKEW_MS;
          skewed = await new LimiterFixture(kind, redis.server.url, { prefix: 'app1' }).ready();
        });
        afterAll(async () => {
          Date.now = realNow;
          await skewed.close();
        });

        it('decides and expires on Redis TIME: a fixed window counts in the server clock', async () => {
          const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 3, window: '1h' };
          // The four decisions and the reads after them in one hour of Redis's clock.
          await untilWindowHasRoom(redis.admin, 3_600_000);
          const before = await redisNowMs(redis.admin);
          const results = [];
          for (let i = 0; i < 4; i++)
            results.push((await skewed.limiter.consume('clock', policy)).allowed);
          expect(results).toEqual([true, true, true, false]);
          const [key] = await redis.admin.keys('*');
          const ttl = await redis.admin.pttl(key);
          const after = await redisNowMs(redis.admin);
          // The window index stored and the expiry are those of Redis's clock, not the app's.
          const [windowIndex] = fixedWindowState(
            (await redis.admin.get(key))!,
            Math.floor(before / 3_600_000),
          );
          expect(windowIndex).toBe(Math.floor(before / 3_600_000));
          const windowEnd = (Math.floor(before / 3_600_000) + 1) * 3_600_000;
          expect(ttl).toBeGreaterThanOrEqual(windowEnd - after - 1);
          expect(ttl).toBeLessThanOrEqual(windowEnd - before + 1);
        });

        it('stamps sliding window log entries with Redis TIME', async () => {
          const policy: RateLimitPolicy = {
            algorithm: 'sliding-window-log',
            limit: 3,
            window: '1m',
          };
          const before = await redisNowMs(redis.admin);
          await skewed.limiter.consume('stamps', policy);
          const [key] = await redis.admin.keys('*');
          const [, score] = await redis.admin.zrange(key, '0', '-1', 'WITHSCORES');
          const ttl = await redis.admin.pttl(key);
          const after = await redisNowMs(redis.admin);
          expect(Number(score)).toBeGreaterThanOrEqual(before);
          expect(Number(score)).toBeLessThanOrEqual(after);
          expect(ttl).toBeGreaterThanOrEqual(60_000 - (after - before) - 1);
        });
      });

      it('reloads each script transparently after SCRIPT FLUSH (NOSCRIPT)', async () => {
        const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 5, window: '1m' };
        // Its two charges in one minute of Redis's clock.
        await untilWindowHasRoom(redis.admin, 60_000);
        const pair: RateLimitPolicy[] = [
          { name: 'a', algorithm: 'token-bucket', limit: 5, window: '1m' },
          { name: 'b', algorithm: 'sliding-window-log', limit: 5, window: '1m' },
        ];
        expect((await fixture.limiter.consume('noscript', policy)).allowed).toBe(true);
        expect((await fixture.limiter.consume('noscript', pair)).allowed).toBe(true);
        await redis.admin.script('FLUSH');
        const again = await fixture.limiter.consume('noscript', policy);
        expect(again.results[0].remaining).toBe(3);
        const pairAgain = await fixture.limiter.consume('noscript', pair);
        expect(pairAgain.results.map((result) => result.remaining)).toEqual([3, 3]);
      });

      it.each([
        ['whole', 10_000],
        ['fractional', 1_000.5],
      ])(
        "fixed window, %s ms: a window's first charge (answered with its reset alone) reads as the full answer does",
        async (_, window) => {
          const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 5, window };
          // Both charges in one window: a window ending between them would give the first a
          // reset from another window's end than the one stored.
          await untilWindowHasRoom(redis.admin, window, window / 2);
          const before = await redisNowMs(redis.admin);
          // Cost 2: not the policy's own, so sent as an argument; then cost 1, its own, written
          // into another script.
          const first = await fixture.limiter.consume('fresh', policy, 2);
          const second = await fixture.limiter.consume('fresh', policy);
          const after = await redisNowMs(redis.admin);
          const [key] = await redis.admin.keys('*');
          const [stored, count] = fixedWindowState(
            (await redis.admin.get(key))!,
            Math.floor(before / window),
          );
          expect(count).toBe(3);
          const end = (stored + 1) * window;
          for (const [decision, remaining] of [
            [first, 3],
            [second, 2],
          ] as const) {
            const [result] = decision.results;
            expect(result).toMatchObject({ allowed: true, remaining, retryAfterMs: 0, delayMs: 0 });
            // Exact: the window's end less a whole millisecond of Redis TIME.
            expect(Number.isInteger(end - result.resetMs)).toBe(true);
            expect(end - result.resetMs).toBeGreaterThanOrEqual(before);
            expect(end - result.resetMs).toBeLessThanOrEqual(after);
          }
        },
      );

      it.each([
        ['index:count', (index: number, count: number) => `${index}:${count}`],
        ['integer', integerState],
      ])(
        "fixed window: an earlier window's state still there (its last ms), in the %s form, is no count of this one",
        async (name, form) => {
          const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 5, window: '1h' };
          const near = Math.floor((await redisNowMs(redis.admin)) / 3_600_000);
          await fixture.limiter.consume(`edge-${name}`, policy);
          const [key] = await redis.admin.keys(`*edge-${name}*`);
          const [index] = fixedWindowState((await redis.admin.get(key))!, near);
          // As a request in a window's first ms may find it: present, but the previous window's.
          await redis.admin.set(key, form(index - 1, 4), 'PX', 60_000);
          const [result] = (await fixture.limiter.consume(`edge-${name}`, policy)).results;
          expect(result.remaining).toBe(4);
          const [stored, count] = fixedWindowState((await redis.admin.get(key))!, near);
          expect(stored).toBeGreaterThanOrEqual(index);
          expect(count).toBe(1);
          // Charged again in the window: counted on, whatever form the first charge wrote.
          const [again] = (await fixture.limiter.consume(`edge-${name}`, policy)).results;
          expect(again.remaining).toBe(3);
          expect(fixedWindowState((await redis.admin.get(key))!, near)).toEqual([stored, 2]);
        },
      );

      it("writes at most 64 routes' values into scripts, then sends further ones as arguments", async () => {
        const limits = Array.from({ length: 80 }, (_, i) => i + 1);
        const separate = await new LimiterFixture(kind, redis.server.url, {
          prefix: 'many',
        }).ready();
        try {
          await redis.admin.script('FLUSH');
          const remaining = await Promise.all(
            limits.map(async (limit) => {
              // An hour: a bucket of 80 a minute would refill a token between the two
              // decisions if they came 750 ms apart on a busy machine.
              const policy: RateLimitPolicy = { algorithm: 'token-bucket', limit, window: '1h' };
              await separate.limiter.consume(`many:${limit}`, policy);
              return (await separate.limiter.consume(`many:${limit}`, policy)).results[0].remaining;
            }),
          );
          expect(remaining).toEqual(limits.map((limit) => Math.max(0, limit - 2)));
          const memory = await redis.admin.info('memory');
          // 64 scripts with values written in, and the one that takes them as arguments.
          expect(/number_of_cached_scripts:(\d+)/.exec(memory)![1]).toBe('65');
        } finally {
          await separate.close();
        }
      });

      it('decides the first requests of new combinations of algorithms sent in one tick', async () => {
        // One auto-pipeline collects them all: each combination's script is new to the client.
        const decisions = await Promise.all(
          ALGORITHMS.map((algorithm) =>
            fixture.limiter.consume(`first:${algorithm}`, [
              { name: 'a', algorithm, limit: 5, window: '1m' },
              { name: 'b', algorithm: 'fixed-window', limit: 5, window: '1h' },
            ]),
          ),
        );
        expect(decisions.map((decision) => decision.allowed)).toEqual(ALGORITHMS.map(() => true));
      });
    });
  }),
);

/** What a client the user configured brings to the store, and a virtual clock's keys. */
describe('Redis store', () => {
  const redis = useRedisServer();
  beforeEach(() => redis.admin.flushall());

  describe("on a client the user configured (the store sends its own commands, not the client's methods)", () => {
    const policy = {
      algorithm: 'fixed-window',
      limit: 100,
      window: 60_000,
    } satisfies RateLimitPolicy;
    // Each test counts its decisions in one window of Redis's clock.
    beforeEach(() => untilWindowHasRoom(redis.admin, policy.window));
    // Closed after each test, failed or not: an open client would keep Jest from exiting.
    let store: RedisStore | undefined;
    afterEach(async () => {
      await store?.close();
      store = undefined;
    });
    const limiterOn = async (options: RedisOptions) => {
      const client = new Redis(redis.server.url, options);
      if (client.status !== 'ready') await once(client, 'ready');
      store = new RedisStore(client, true);
      return { client, limiter: new RateLimiter(resolveOptions({ prefix: 'app1' }), store) };
    };

    it('survives a socket that fails twice, as a TLS handshake with an unknown CA can', async () => {
      const { client } = await limiterOn({ retryStrategy: () => null });
      const socket = client.stream;
      // What Node's TLS socket does: the certificate error, then the server's alert.
      socket.emit('error', new Error('unable to verify the first certificate'));
      expect(() => socket.emit('error', new Error('tlsv1 alert decode error'))).not.toThrow();
    });

    it('survives a socket that fails twice after the store closed its client', async () => {
      const { client } = await limiterOn({ retryStrategy: () => null });
      const socket = client.stream;
      await store!.close();
      // A closed client passes on no error: the first is heard by ioredis alone.
      socket.emit('error', new Error('unable to verify the first certificate'));
      expect(() => socket.emit('error', new Error('tlsv1 alert decode error'))).not.toThrow();
    });

    it("adds no listener to the client per limiter: the store's one tells them all", async () => {
      const { client, limiter } = await limiterOn({});
      const listening = client.listenerCount('ready');
      // Limiters made per simulation, as the sandbox makes them, some never shut down.
      const simulated = Array.from({ length: 12 }, (_, run) => limiter.withClock(() => run));
      expect(client.listenerCount('ready')).toBe(listening);
      let heard = 0;
      const stop = store!.onReady(() => heard++);
      client.emit('ready');
      expect(heard).toBe(1);
      stop();
      client.emit('ready');
      expect(heard).toBe(1);
      await Promise.all(simulated.map((one) => one.onApplicationShutdown()));
      expect(client.listenerCount('ready')).toBe(listening);
    });

    it("keeps the client's key prefix, as its own methods would", async () => {
      const { limiter } = await limiterOn({ keyPrefix: 'tenant:' });
      await limiter.consume('user-1', policy);
      const second = await limiter.consume('user-1', policy);
      expect(second.results[0].remaining).toBe(98);
      expect(await redis.admin.keys('*')).toEqual([
        expect.stringMatching(/^tenant:app1:\{user-1\}:/),
      ]);
    });

    it("leaves the socket to the client's other commands, in the same turn and after", async () => {
      // No auto-pipeline: the store still sends a turn's calls together, and lets go of the
      // socket at the end of the turn (else these would wait forever).
      const { client, limiter } = await limiterOn({ enableAutoPipelining: false });
      const decisions = Array.from({ length: 50 }, (_, i) =>
        limiter.consume(`burst-${i % 5}`, policy),
      );
      const ping = client.ping();
      const remaining = (await Promise.all(decisions)).map(
        (decision) => decision.results[0].remaining,
      );
      expect(remaining.sort((a, b) => a - b).slice(0, 5)).toEqual([90, 90, 90, 90, 90]);
      expect(await ping).toBe('PONG');
      expect(await client.dbsize()).toBe(5);
    });

    it("sends a turn's calls in one write to the socket", async () => {
      const { client, limiter } = await limiterOn({});
      // Its script loaded first, so every call below is the same EVALSHA.
      await limiter.consume('writes', policy);
      const socket = client.stream as unknown as {
        _write: (...args: unknown[]) => void;
        _writev: (...args: unknown[]) => void;
      };
      let writes = 0;
      for (const method of ['_write', '_writev'] as const) {
        const write = socket[method];
        socket[method] = function (this: unknown, ...args: unknown[]) {
          writes++;
          return write.apply(this, args);
        };
      }
      await Promise.all(Array.from({ length: 10 }, () => limiter.consume('writes', policy)));
      expect(writes).toBe(1);
    });

    it("gives a failed call the caller's stack under showFriendlyErrorStack, as its own methods would", async () => {
      await limiterOn({ showFriendlyErrorStack: true });
      const [resolved] = resolvePolicies([policy], { label: 'test', defaultScope: 'global' });
      const key = 'app1:{friendly}:wrong-type';
      // A hash where the script expects a string: the script fails with WRONGTYPE.
      await redis.admin.hset(key, 'field', '1');
      const failure = await store!
        .decide({
          mode: 'consume',
          keys: [key],
          policies: [resolved],
          costs: [1],
          now: undefined,
          ttlFloorMs: 0,
        })
        .then(
          () => undefined,
          (error: Error) => error,
        );
      expect(failure?.message).toMatch(/WRONGTYPE/);
      expect(failure?.stack).toMatch(/redis\.store\.spec\.ts/);
    });
  });

  it('keeps keys of a virtual clock alive in real time long enough for a slow simulation', async () => {
    const clock = new VirtualClock();
    const fixture = await new LimiterFixture('redis', redis.server.url, {
      clock: clock.read,
    }).ready();
    await fixture.limiter.consume('sim', { algorithm: 'fixed-window', limit: 5, window: 10 });
    const [key] = await redis.admin.keys('*');
    expect(await redis.admin.pttl(key)).toBeGreaterThan(30_000);
    await fixture.close();
  });
});
