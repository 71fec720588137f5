import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { RateLimitUnavailableException } from '../../lib/rate-limit.exceptions.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import type {
  DecideRequest,
  RateLimitStore,
} from '../../lib/interfaces/rate-limit-store.interface.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { LimiterFixture } from '../support/limiters.js';
import { type RedisServer, startRedisServer, untilWindowHasRoom } from '../support/redis-server.js';
import { watchTimerLateness } from '../support/timer-lateness.js';

const TIMEOUT_MS = 100;
const POLICY: RateLimitPolicy = { algorithm: 'fixed-window', limit: 50, window: '1h' };

/** Holds the event loop, as a synchronous CPU-bound handler does. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** How `work` settled (its error's message, if it failed), and its ms since `started` (by default, when `work` was made). */
async function timed<T>(
  work: Promise<T>,
  started = performance.now(),
): Promise<{ ms: number; ok: boolean; error?: string }> {
  const error = await work.then(
    () => undefined,
    // The store's own error: the exception's message is the one a client may see.
    (failure: unknown) =>
      failure instanceof Error
        ? ((failure.cause as Error | undefined) ?? failure).message
        : String(failure),
  );
  return { ms: performance.now() - started, ok: error === undefined, error };
}

/**
 * A Redis whose every decision arrives after its wantedUntil, as if this process were always
 * too late: every answer is stale, and the limiter asks again until maxWait runs out.
 */
class AlwaysStaleStore implements RateLimitStore {
  constructor(private readonly inner: RedisStore) {}
  decide(request: DecideRequest) {
    return this.inner.decide({ ...request, wantedUntil: 1 });
  }
  reset(keys: readonly string[]) {
    return this.inner.reset(keys);
  }
  close() {
    return this.inner.close();
  }
  time() {
    return this.inner.time();
  }
}

/**
 * How far past its deadline or maxWait a decision may settle, besides the event loop's own
 * delay: the turns from the timer to the rejection (a few ms on any machine).
 */
const MAX_WAIT_MARGIN_MS = 25;

/** The limiter on a real Redis that its own test stalls; the breaker's logs are not checked here. */
describe('the limiter when its process is late or its store silent', () => {
  let server: RedisServer;
  let fixture: LimiterFixture;
  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(async () => {
    await fixture?.close();
    await server.stop();
  });

  const start = async (options = {}) => {
    fixture = await new LimiterFixture('redis', server.url, {
      timeout: TIMEOUT_MS,
      ...options,
    }).ready();
    // The store has answered once, long before the requests under test.
    await fixture.limiter.consume('warm-up', POLICY);
    // The tests count admissions in one window of an hour on Redis's clock; the longest
    // stalls Redis for a second and then waits one out.
    await untilWindowHasRoom(fixture.client!, 3_600_000, 10_000);
    return fixture.limiter;
  };

  it.each([
    ['before the requests go out', false],
    ['while the answers wait in the socket', true],
  ])(
    'a loop blocked 3 deadlines long %s fails no decision and admits exactly the limit',
    async (_when, flushFirst) => {
      const limiter = await start();
      const decisions = Array.from({ length: 200 }, () => limiter.consume('blocked', POLICY));
      if (flushFirst) await nextTurn();
      blockEventLoop(3 * TIMEOUT_MS);
      const settled = await Promise.allSettled(decisions);
      const admitted = settled.filter(
        (result) => result.status === 'fulfilled' && result.value.allowed,
      );
      expect(settled.filter((result) => result.status === 'rejected')).toEqual([]);
      expect(admitted).toHaveLength(50);
    },
  );

  it('a silent store fails a decision after the deadline, however busy the loop is meanwhile', async () => {
    const limiter = await start();
    // Answers that took a while lately make a decision wanted longer (wantedUntil), and a
    // silent store is given up on at the deadline all the same.
    for (let i = 0; i < 3; i++) await limiter.consume('recent', POLICY);
    await server.pause(2_000);
    const decision = timed(limiter.consume('silent', POLICY));
    await nextTurn();
    blockEventLoop(TIMEOUT_MS / 2);
    // Blocked well before the check is due, so the check runs on time unless this process
    // is late for other reasons (a loaded machine); a late check judges all the same.
    const lateness = watchTimerLateness();
    const { ms, ok } = await decision;
    expect(ok).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
    // Far below the 2 s the store stays silent (and maxWait): the silence was judged.
    expect(ms).toBeLessThan(TIMEOUT_MS + lateness() + MAX_WAIT_MARGIN_MS);
    await expect(limiter.consume('silent', POLICY)).rejects.toBeInstanceOf(
      RateLimitUnavailableException,
    );
  });

  it('a hung store costs one deadline per probe interval, and the breaker closes when it answers', async () => {
    const limiter = await start({ breaker: { failures: 3, halfOpenAfter: 400 } });
    const stallMs = 2_000;
    await server.pause(stallMs);
    const stalledAt = performance.now();
    const during: { ms: number; ok: boolean }[] = [];
    while (performance.now() - stalledAt < stallMs - 2 * TIMEOUT_MS) {
      during.push(await timed(limiter.consume('hung', POLICY)));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(during.every((decision) => !decision.ok)).toBe(true);
    const waited = during.filter((decision) => decision.ms >= TIMEOUT_MS / 2);
    // Three failures open it; after that one probe per 400 ms of a 1.8 s stall.
    expect(waited.length).toBeGreaterThanOrEqual(3);
    expect(waited.length).toBeLessThanOrEqual(3 + Math.ceil(stallMs / 400));
    expect(during.length - waited.length).toBeGreaterThan(50);
    // Refused at once, not after a deadline.
    const refused = during.filter((decision) => decision.ms < TIMEOUT_MS / 2);
    expect(Math.max(...refused.map((decision) => decision.ms))).toBeLessThan(20);

    // Back: the next probe (at most 400 ms on) closes the breaker, and decisions flow again.
    await new Promise((resolve) => setTimeout(resolve, stallMs - (performance.now() - stalledAt)));
    const backAt = performance.now();
    let answered = false;
    while (!answered && performance.now() - backAt < 2_000) {
      answered = (await timed(limiter.consume('hung', POLICY))).ok;
      if (!answered) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(answered).toBe(true);
    expect(performance.now() - backAt).toBeLessThan(400 + 2 * TIMEOUT_MS + 200);
    const after = await Promise.all(
      Array.from({ length: 5 }, () => timed(limiter.consume('hung', POLICY))),
    );
    expect(after.every((decision) => decision.ok)).toBe(true);
  });

  it('without the breaker, every decision on a hung store waits out the deadline', async () => {
    const limiter = await start({ breaker: false });
    await server.pause(1_000);
    const during: { ms: number; ok: boolean }[] = [];
    for (let i = 0; i < 5; i++) during.push(await timed(limiter.consume('unbroken', POLICY)));
    expect(during.every((decision) => !decision.ok && decision.ms >= TIMEOUT_MS - 1)).toBe(true);
  });

  it.each([
    ['with the loop free', 0],
    ['with the loop blocked 150 ms across it', 150],
  ])(
    'maxWait is a hard cap %s: every decision settled by then, plus the loop delay',
    async (_how, blockMs) => {
      const maxWait = 400;
      await start();
      const limiter = new RateLimiter(
        resolveOptions({ timeout: TIMEOUT_MS, maxWait, breaker: false }),
        new AlwaysStaleStore(new RedisStore(fixture.client!, false)),
      );
      // Warm: the first call of a limiter prepares its policies and script.
      await limiter.consume('capped', POLICY).catch(() => undefined);
      const lateness = watchTimerLateness();
      // From before the calls: a process descheduled between a call and its timing would
      // otherwise see a decision settle early.
      const startedAt = performance.now();
      const decisions = Array.from({ length: 20 }, () =>
        timed(limiter.consume('capped', POLICY), startedAt),
      );
      if (blockMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, maxWait - blockMs / 2));
        blockEventLoop(blockMs);
      }
      const settled = await Promise.all(decisions);
      const lateMs = lateness();
      const times = settled.map((decision) => decision.ms);
      expect(settled.every((decision) => !decision.ok)).toBe(true);
      // Named by the option, not by what was left of it for the last try.
      expect(
        settled.filter((decision) => !decision.error!.includes(`maxWait ${maxWait} ms`)),
      ).toEqual([]);
      expect(Math.min(...times)).toBeGreaterThanOrEqual(maxWait - 2);
      expect(Math.max(...times)).toBeLessThanOrEqual(maxWait + lateMs + MAX_WAIT_MARGIN_MS);
    },
  );

  it.each([-30_000, 30_000])(
    'with the wall clock %i ms off, fresh decisions stay fresh and abandoned ones are not charged',
    async (skewMs) => {
      const realNow = Date.now.bind(Date);
      const skewed = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
      try {
        const limiter = await start({ breaker: false });
        const policy: RateLimitPolicy = { algorithm: 'fixed-window', limit: 10, window: '1h' };
        const fresh = await Promise.all(
          Array.from({ length: 20 }, () => limiter.consume('skewed', policy)),
        );
        expect(fresh.filter((decision) => decision.allowed)).toHaveLength(10);

        // Stalled past the deadline: the app gives up on these, and they run on wake.
        await server.pause(1_000);
        const abandoned = await Promise.allSettled(
          Array.from({ length: 20 }, () => limiter.consume('abandoned', policy)),
        );
        expect(abandoned.every((result) => result.status === 'rejected')).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const after = await limiter.consume('abandoned', policy);
        expect(after.results[0].remaining).toBe(9);
      } finally {
        skewed.mockRestore();
      }
    },
  );
});
