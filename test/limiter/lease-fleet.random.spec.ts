import { setTimeout as sleep } from 'node:timers/promises';
import type {
  Algorithm,
  RateLimitPolicy,
} from '../../lib/interfaces/rate-limit-policy.interface.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { seededRandom } from '../support/seeded-random.js';

/**
 * Pods (RateLimiters, each with its own connection) leasing from one budget on a real Redis,
 * on a virtual clock so that every admission's window is known: pods, limits, lease sizes,
 * costs, batches and arrival orders drawn at random. Whatever the interleaving, no window
 * admits past its limit (a token bucket: no interval past what it refills, plus a lease per
 * pod), and a denial comes only once what is left unleased is less than its cost, so at most
 * what the pods hold is lost to early denials.
 */
const redis = useRedisServer();
const WINDOW = 1_000;
const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const ALGORITHMS: readonly Algorithm[] = ['fixed-window', 'sliding-window-counter', 'token-bucket'];

interface Outcome {
  readonly at: number;
  readonly cost: number;
  readonly allowed: boolean;
}

describe.each(SEEDS)('seed %d', (seed) => {
  it('never admits past the limit, and denies early by at most what the pods hold', async () => {
    const random = seededRandom(seed);
    const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
    const algorithm = ALGORITHMS[seed % ALGORITHMS.length];
    const pods = int(2, 6);
    const limit = int(20, 200);
    const lease = int(1, Math.ceil(limit / 4));
    const maxCost = int(1, 4);
    // Demand a trickle in one window and a flood in the next, so that windows end with units
    // still held, and the next one would admit them past its limit were they still used.
    const flood = int(10, 40);
    const maxStep = WINDOW / int(4, 20);
    const policy: RateLimitPolicy = { name: 'r', algorithm, limit, window: WINDOW, lease };
    const clock = new VirtualClock(WINDOW * 1_000_000 + int(0, WINDOW - 1));
    const fleet = await Promise.all(
      Array.from({ length: pods }, () =>
        new LimiterFixture('redis', redis.server.url, { clock: clock.read }).ready(),
      ),
    );
    const outcomes: Outcome[] = [];
    const start = clock.now;
    try {
      while (clock.now - start < 5 * WINDOW) {
        const flooding = Math.floor(clock.now / WINDOW) % 2 === seed % 2;
        const batch = Array.from({ length: int(1, flooding ? flood : 2) }, () => ({
          pod: int(0, pods - 1),
          cost: int(1, maxCost),
        }));
        const at = clock.now;
        const decisions = await Promise.all(
          batch.map(({ pod, cost }) => fleet[pod].limiter.consume('k', policy, cost)),
        );
        decisions.forEach(({ allowed }, i) => outcomes.push({ at, cost: batch[i].cost, allowed }));
        clock.advance(int(0, maxStep));
      }
    } finally {
      await Promise.all(fleet.map((pod) => pod.limiter.onApplicationShutdown()));
      await Promise.all(fleet.map((pod) => pod.close()));
      await redis.admin.flushall();
    }
    const admitted = (from: number, to: number) =>
      outcomes
        .filter(({ at, allowed }) => allowed && at >= from && at < to)
        .reduce((sum, { cost }) => sum + cost, 0);
    const held = pods * lease;
    if (algorithm === 'token-bucket') {
      // Bucket full at the start: what it holds, plus what it refilled, plus a lease per pod.
      const instants = [...new Set(outcomes.map(({ at }) => at))];
      for (const from of instants) {
        for (const to of instants.filter((t) => t >= from)) {
          expect(admitted(from, to + 1)).toBeLessThanOrEqual(
            limit + ((to - from) * limit) / WINDOW + held,
          );
        }
      }
      return;
    }
    const windowOf = (at: number) => Math.floor(at / WINDOW);
    const windows = [...new Set(outcomes.map(({ at }) => windowOf(at)))];
    for (const index of windows) {
      const inWindow = admitted(index * WINDOW, (index + 1) * WINDOW);
      expect(inWindow).toBeLessThanOrEqual(limit);
      // The counter also weighs the previous window in: its early denials have no such bound.
      if (algorithm !== 'fixed-window') continue;
      const denied = outcomes.filter(({ at, allowed }) => !allowed && windowOf(at) === index);
      for (const { cost } of denied) expect(inWindow).toBeGreaterThan(limit - cost - held);
    }
  });
});

/**
 * Token-bucket leases ending while pods idle, on the app's real clock: what a lease still
 * holds at its end goes back by timer, in the middle of other pods' traffic. Each admission
 * happened between its request's sending and its answer: those within an interval stay
 * within what the bucket holds and refills over it, plus a lease per pod.
 */
describe.each([1, 2, 3])('seed %d, a real clock', (seed) => {
  it('never admits past a token bucket with leases given back at their end', async () => {
    const random = seededRandom(seed);
    const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
    const pods = int(2, 4);
    const limit = int(100, 300);
    const lease = int(2, Math.ceil(limit / 8));
    const policy: RateLimitPolicy = {
      name: 'r',
      algorithm: 'token-bucket',
      limit,
      window: WINDOW,
      lease,
    };
    const fleet = await Promise.all(
      Array.from({ length: pods }, () =>
        new LimiterFixture('redis', redis.server.url, { clock: 'local' }).ready(),
      ),
    );
    const admissions: { sent: number; answered: number; cost: number }[] = [];
    const start = Date.now();
    try {
      while (Date.now() - start < 1_200) {
        // Bursts on a few pods, then a pause that outlasts some leases.
        const batch = Array.from({ length: int(1, 30) }, () => ({
          pod: int(0, pods - 1),
          cost: int(1, 3),
        }));
        await Promise.all(
          batch.map(async ({ pod, cost }) => {
            const sent = Date.now();
            const { allowed } = await fleet[pod].limiter.consume('k', policy, cost);
            if (allowed) admissions.push({ sent, answered: Date.now(), cost });
          }),
        );
        await sleep(int(0, (3 * lease * WINDOW) / limit));
      }
    } finally {
      await Promise.all(fleet.map((pod) => pod.limiter.onApplicationShutdown()));
      await Promise.all(fleet.map((pod) => pod.close()));
      await redis.admin.flushall();
    }
    const held = pods * lease;
    const instants = [...new Set(admissions.flatMap(({ sent, answered }) => [sent, answered]))];
    for (const from of instants) {
      for (const to of instants.filter((t) => t >= from)) {
        const within = admissions
          .filter(({ sent, answered }) => sent >= from && answered <= to)
          .reduce((sum, { cost }) => sum + cost, 0);
        expect(within).toBeLessThanOrEqual(limit + ((to - from) * limit) / WINDOW + held);
      }
    }
  }, 20_000);
});
