import { Redis } from 'ioredis';
import { RateLimitConfigError, RateLimitUnavailableException } from '../../lib/index.js';
import { RedisThrottlerStorage } from '../../lib/throttler/index.js';
import { throttlerKeys } from '../../lib/throttler/throttler-keys.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The storage on its own (its semantics: differential.spec.ts; in apps: test/e2e/throttler-storage.spec.ts).
 * It imports only types of @nestjs/throttler (and the in-memory storage it uses without
 * redis only when asked), so Jest loads it.
 */
const redis = useRedisServer();

const MINUTE = 60_000;

describe('RedisThrottlerStorage', () => {
  describe('options, checked at construction', () => {
    it.each<[string, unknown, unknown, RegExp]>([
      ['an empty URL', '', undefined, /option redis: is an empty string \(is REDIS_URL set/],
      ['a blank URL', ' ', undefined, /option redis: is an empty string/],
      ['null', null, undefined, /option redis: must be a URL/],
      ['a number', 6379, undefined, /option redis: must be a URL/],
      [
        'no redis with a virtual clock',
        undefined,
        { clock: () => 0 },
        /option clock: a function needs Redis/,
      ],
      [
        'a prefix with a brace',
        'redis://x',
        { prefix: 'a{b' },
        /option prefix: must be 1-32 bytes/,
      ],
      ['a 33-byte prefix', 'redis://x', { prefix: 'p'.repeat(33) }, /option prefix/],
      ['a timeout of 0', 'redis://x', { timeout: 0 }, /option timeout: must be a positive number/],
      [
        'failureMode local',
        'redis://x',
        { failureMode: 'local' },
        /option failureMode: must be 'open' or 'closed'/,
      ],
      ['a clock of 5', 'redis://x', { clock: 5 }, /option clock/],
    ])('refuses %s with RateLimitConfigError', (_, url, options, message) => {
      const create = () => new RedisThrottlerStorage(url as string, options as never);
      expect(create).toThrow(RateLimitConfigError);
      expect(create).toThrow(message);
    });

    it('rejects a ttl, limit or blockDuration that is no number (or an unbounded ttl or block), sending nothing', async () => {
      const storage = new RedisThrottlerStorage(redis.server.url, { prefix: 'bad' });
      await storage.onModuleInit();
      await expect(storage.increment('k', NaN, 1, 0, 'default')).rejects.toThrow(
        /ttl must be a number of ms/,
      );
      await expect(storage.increment('k', 1, '3' as never, 0, 'default')).rejects.toThrow(
        /limit must be a number/,
      );
      await expect(storage.increment('k', 1, 1, Infinity, 'default')).rejects.toThrow(
        /blockDuration must be a number of ms/,
      );
      expect(await redis.admin.keys('bad:*')).toEqual([]);
      // An infinite limit is a limit nothing reaches.
      const record = await storage.increment('k', MINUTE, Infinity, MINUTE, 'default');
      expect(record).toMatchObject({ totalHits: 1, isBlocked: false });
      await storage.onApplicationShutdown();
    });
  });

  describe('keys', () => {
    let client: Redis;
    let storage: RedisThrottlerStorage;
    beforeAll(async () => {
      client = new Redis(redis.server.url);
      storage = new RedisThrottlerStorage(client, { prefix: 'keys', clock: 'local' });
      await storage.onModuleInit();
    });
    afterAll(() => client.disconnect());

    it.each([
      ['the guard key (SHA-256 hex)', 'a'.repeat(64), 'default'],
      ['braces and newlines', '}{evil}\n{', 'x}{'],
      ['10 kB of unicode', 'ü'.repeat(10_000), 'ñ'.repeat(5_000)],
    ])(
      '%s: both keys under the prefix, in one hash tag, under 256 bytes, each with an expiry',
      async (_, key, name) => {
        const { record, hits } = throttlerKeys('keys', key, name);
        await storage.increment(key, MINUTE, 5, 0, name);
        const tag = (k: string) => /\{([^}]*)\}/.exec(k)?.[1];
        expect(record.startsWith('keys:{')).toBe(true);
        expect(tag(hits)).toBe(tag(record));
        for (const written of [record, hits]) {
          expect(Buffer.byteLength(written)).toBeLessThan(256);
          const ttl = await client.pttl(written);
          expect(ttl).toBeGreaterThan(MINUTE - 1_000);
          expect(ttl).toBeLessThanOrEqual(MINUTE);
        }
      },
    );

    it("a key shared by names lives as long as any name's last hit, not the window's end", async () => {
      const { record } = throttlerKeys('keys', 'shared', 'short');
      await storage.increment('shared', 1_000, 5, 0, 'short');
      await storage.increment('shared', MINUTE, 5, 0, 'long');
      await storage.increment('shared', 1_000, 5, 0, 'short');
      expect(await client.pttl(record)).toBeGreaterThan(MINUTE - 1_000);
    });

    it('a block outlives the window: the record lives to its end', async () => {
      const { record } = throttlerKeys('keys', 'blocked', 'default');
      for (let i = 0; i < 3; i++) await storage.increment('blocked', 1_000, 2, MINUTE, 'default');
      expect(await client.pttl(record)).toBeGreaterThan(MINUTE - 1_000);
    });
  });

  describe('Redis', () => {
    let client: Redis;
    beforeAll(() => {
      client = new Redis(redis.server.url);
    });
    afterAll(() => client.disconnect());

    it('counts on after SCRIPT FLUSH (NOSCRIPT: sent again with EVAL)', async () => {
      const storage = new RedisThrottlerStorage(client, { prefix: 'flush' });
      await storage.onModuleInit();
      expect((await storage.increment('k', MINUTE, 2, MINUTE, 'default')).totalHits).toBe(1);
      await client.script('FLUSH');
      expect((await storage.increment('k', MINUTE, 2, MINUTE, 'default')).totalHits).toBe(2);
      const third = await storage.increment('k', MINUTE, 2, MINUTE, 'default');
      expect(third).toEqual({
        totalHits: 3,
        timeToExpire: 60,
        isBlocked: true,
        timeToBlockExpire: 60,
      });
    });

    it('never closes a client the app owns; closes the one it made from a URL', async () => {
      const owned = new RedisThrottlerStorage(client, { prefix: 'own' });
      await owned.onModuleInit();
      await owned.onApplicationShutdown();
      expect(client.status).toBe('ready');

      const clientsNow = async () =>
        String(await client.client('LIST'))
          .trim()
          .split('\n').length;
      const before = await clientsNow();
      const made = new RedisThrottlerStorage(redis.server.url, { prefix: 'made' });
      await made.onModuleInit();
      expect(await clientsNow()).toBe(before + 1);
      await made.onApplicationShutdown();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await clientsNow()).toBe(before);
    });
  });

  /**
   * Redis frozen (SIGSTOP: the socket stays open and silent) and killed, with a client the app
   * made with ioredis' own defaults (offline queue, 20 retries per request): the storage's
   * deadline holds whatever the client would wait.
   */
  describe.each(['open', 'closed'] as const)('Redis away, failureMode %s', (failureMode) => {
    const own = useRedisServer();
    // Nested, so the client is closed before the server stops.
    describe('a client with ioredis defaults', () => {
      let client: Redis;
      let storage: RedisThrottlerStorage;
      beforeAll(async () => {
        // A short disconnectTimeout only: ioredis arms it even for a socket already closed.
        client = new Redis(own.server.url, { disconnectTimeout: 100 });
        client.on('error', () => undefined);
        storage = new RedisThrottlerStorage(client, { failureMode, timeout: 100 });
        await storage.onModuleInit();
        // Admitted once already: the failure mode answers, not a stale count.
        await storage.increment('k', MINUTE, 1, MINUTE, 'default');
      });
      afterAll(() => client.disconnect());

      /** The answer (or error) of one increment, and how long it took. */
      async function timed() {
        const started = performance.now();
        const outcome = await storage.increment('k', MINUTE, 1, MINUTE, 'default').then(
          (record) => ({ record }),
          (error: unknown) => ({ error }),
        );
        return { ...outcome, took: performance.now() - started };
      }

      function expectFailureMode(outcome: Awaited<ReturnType<typeof timed>>) {
        if (failureMode === 'open') {
          expect(outcome).toMatchObject({
            record: { totalHits: 0, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 },
          });
        } else {
          expect((outcome as { error: unknown }).error).toBeInstanceOf(
            RateLimitUnavailableException,
          );
          expect((outcome as { error: RateLimitUnavailableException }).error.getStatus()).toBe(503);
        }
      }

      it('frozen: answers by the failure mode once the 100 ms deadline passes', async () => {
        await own.server.pause(1_500);
        const outcome = await timed();
        expectFailureMode(outcome);
        expect(outcome.took).toBeGreaterThanOrEqual(95);
        expect(outcome.took).toBeLessThan(1_000);
        // Back: the hit counted before is still there, and blocks.
        await new Promise((resolve) => setTimeout(resolve, 1_600));
        expect((await storage.increment('k', MINUTE, 1, MINUTE, 'default')).isBlocked).toBe(true);
      });

      it('killed: answers by the failure mode within the deadline', async () => {
        await own.server.kill();
        const outcome = await timed();
        expectFailureMode(outcome);
        expect(outcome.took).toBeLessThan(1_000);
        await own.server.restart();
      });
    });
  });
});
