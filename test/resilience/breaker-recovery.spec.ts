import { once } from 'node:events';
import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import type { RateLimitStore } from '../../lib/interfaces/rate-limit-store.interface.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { LimiterFixture } from '../support/limiters.js';
import {
  type RedisServer,
  sendRawCommand,
  startRedisServer,
  untilWindowHasRoom,
} from '../support/redis-server.js';

const TIMEOUT_MS = 100;
const POLICY: RateLimitPolicy = { algorithm: 'fixed-window', limit: 1_000, window: '1h' };
/**
 * A probe interval no test waits out: a decision on Redis sooner than this after it is back
 * came from the breaker closing on an answer, not from a request's probe.
 */
const HALF_OPEN_AFTER_MS = 5_000;

const settled = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    // The store's own error: the exception's message is the one a client may see.
    (error: Error) => ((error.cause as Error | undefined) ?? error).message,
  );

/** The breaker recovers the moment Redis answers again, whatever the fault. */
describe('the circuit breaker when Redis is back', () => {
  let server: RedisServer;
  let fixture: LimiterFixture;
  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(async () => {
    server = await startRedisServer();
    fixture = await new LimiterFixture('redis', server.url, {
      timeout: TIMEOUT_MS,
      breaker: { failures: 3, halfOpenAfter: HALF_OPEN_AFTER_MS },
    }).ready();
    await untilWindowHasRoom(fixture.client!, 3_600_000, 10_000);
  });
  afterEach(async () => {
    await fixture.limiter.onApplicationShutdown();
    await fixture.close();
    await server.stop();
  });

  it('fast error answers (OOM) never open it: the first decision once writes are accepted is on Redis', async () => {
    const { limiter } = fixture;
    await sendRawCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
    await sendRawCommand(server.port, ['CONFIG', 'SET', 'maxmemory', '1']);
    const during: string[] = [];
    for (let i = 0; i < 10; i++) during.push(await settled(limiter.consume(`oom-${i}`, POLICY)));
    expect(during.every((outcome) => /OOM/.test(outcome))).toBe(true);

    await sendRawCommand(server.port, ['CONFIG', 'SET', 'maxmemory', '0']);
    const decision = await limiter.consume('after-oom', POLICY);
    expect(decision.allowed).toBe(true);
    expect(decision.results[0].remaining).toBe((POLICY.limit as number) - 1);
  });

  it('after a stall opened it, the first answer closes it, long before a request would probe', async () => {
    const { limiter } = fixture;
    const stallMs = 1_000;
    await server.pause(stallMs);
    const stalledAt = performance.now();
    const during: string[] = [];
    while (performance.now() - stalledAt < stallMs - 2 * TIMEOUT_MS) {
      during.push(await settled(limiter.consume('stalled', POLICY)));
    }
    expect(during.some((outcome) => /circuit breaker open/.test(outcome))).toBe(true);

    await new Promise((resolve) => setTimeout(resolve, stallMs - (performance.now() - stalledAt)));
    const resumedAt = performance.now();
    let outcome = '';
    while (outcome !== 'ok' && performance.now() - resumedAt < HALF_OPEN_AFTER_MS / 2) {
      outcome = await settled(limiter.consume('stalled', POLICY));
      if (outcome !== 'ok') await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(outcome).toBe('ok');
    // The background probe in flight is answered as Redis resumes (timers late on a busy
    // machine aside); a request's probe would have come HALF_OPEN_AFTER_MS after opening.
    expect(performance.now() - resumedAt).toBeLessThan(500);
  });

  it('a connection that becomes ready closes it at once, where no probe asks the store', async () => {
    // Without time() nothing probes in the background: only a request every
    // HALF_OPEN_AFTER_MS, which this test never waits out.
    const client = new Redis(server.url, { retryStrategy: () => 10, disconnectTimeout: 200 });
    client.on('error', () => undefined);
    await once(client, 'ready');
    const redis = new RedisStore(client, true);
    const store: RateLimitStore = {
      decide: (request) => redis.decide(request),
      reset: (keys) => redis.reset(keys),
      close: () => redis.close(),
      onReady: (listener) => redis.onReady(listener),
    };
    const readyListeners = client.listenerCount('ready');
    const limiter = new RateLimiter(
      resolveOptions({
        timeout: TIMEOUT_MS,
        breaker: { failures: 3, halfOpenAfter: HALF_OPEN_AFTER_MS },
      }),
      store,
    );
    try {
      await server.pause(10_000);
      const silent = await Promise.all(
        Array.from({ length: 3 }, (_, i) => settled(limiter.consume(`silent-${i}`, POLICY))),
      );
      expect(silent.every((outcome) => /no answer within/.test(outcome))).toBe(true);
      expect(await settled(limiter.consume('refused', POLICY))).toMatch(/circuit breaker open/);

      await server.kill();
      await server.restart();
      const readyAt = performance.now();
      if (client.status !== 'ready') await once(client, 'ready');
      expect(await settled(limiter.consume('after-ready', POLICY))).toBe('ok');
      expect(performance.now() - readyAt).toBeLessThan(HALF_OPEN_AFTER_MS / 2);
    } finally {
      await limiter.onApplicationShutdown();
      expect(client.listenerCount('ready')).toBe(readyListeners);
      await store.close();
      // Closed between reconnects, the fixture's client would hold Jest open for 2 s.
      if (fixture.client!.status !== 'ready') await once(fixture.client!, 'ready');
    }
  });
});
