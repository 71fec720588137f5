import { Logger } from '@nestjs/common';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
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
    (error: Error) => error.message,
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
});
