import {
  ALGORITHMS,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitPolicy,
} from '../../lib/index.js';
import type { Charge } from '../../lib/limiter/rate-limiter.service.js';
import type { ResolvedPolicy } from '../../lib/interfaces/resolved-policy.interface.js';
import { LimiterFixture, VirtualClock } from '../support/limiters.js';
import { seededRandom } from '../support/seeded-random.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The Lua scripts are the one source of truth; the embedded store is held to them here.
 * Randomized traces of (time, key, cost, policies) run through both stores on one virtual
 * clock, and every answer must match field for field. A seeded generator makes a failure
 * reproducible: the seed is in the test name.
 *
 * Production clocks (Redis TIME, Date.now) tick in whole milliseconds, so most traces do;
 * a few seeds run on fractional times, which only virtual clocks produce. Traces aim at
 * the boundaries where off-by-one mistakes live: exact window edges, and the exact retry
 * time a denial announced, where the same request must pass (one millisecond earlier it
 * must not). They also reset budgets, peek, ask for costs no policy can ever admit, and
 * give charges back: the latest (RateLimiter.refund) and a given earlier one, at the instant
 * it was decided (refundCharge, as the guard does for policies that count by outcome).
 */
const WHOLE_MS_SEEDS = Array.from({ length: 10 }, (_, i) => i + 1);
const FRACTIONAL_SEEDS = [11, 12];
const STEPS = 400;
/** Each kind of boundary or operation must occur at least this often per trace. */
const AT_LEAST = 5;

const WINDOWED = new Set(['fixed-window', 'sliding-window-counter']);

/** `blocks` draws the block durations apart, so that the other draws stay as they were. */
function randomPolicies(
  next: () => number,
  route: number,
  blocks: () => number,
): RateLimitPolicy[] {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const count = 1 + Math.floor(next() * 3);
  return Array.from({ length: count }, (_, i) => {
    const limit = pick([1, 2, 3, 5, 7, 10, 25]);
    return {
      // Unique per route, so no two routes share a key and a retry is the route's own.
      name: `r${route}p${i}`,
      algorithm: pick(ALGORITHMS),
      limit,
      window: pick([100, 250, 1_000, 1_500, 7_000]),
      burst: pick([undefined, 1, limit, limit * 2]),
      blockDuration: [undefined, undefined, 150, 1_000][Math.floor(blocks() * 4)],
    };
  });
}

/** The largest cost every policy of the route can admit (the library's maxCost). */
const maxCostOf = (policies: readonly RateLimitPolicy[]): number =>
  Math.min(
    ...policies.map(
      (p) => (p.algorithm?.endsWith('bucket') ? (p.burst ?? p.limit) : p.limit) as number,
    ),
  );

interface TraceCounts {
  decisions: number;
  admitted: number;
  denied: number;
  windowEdges: number;
  retryTimes: number;
  peeks: number;
  resets: number;
  impossible: number;
  /** Denials on routes with a blockDuration policy. */
  blocks: number;
  /** Refunds of the latest charge, and of an earlier one at its instant. */
  refunds: number;
  chargeRefunds: number;
}

type Answer = RateLimitDecision | { rejected: number; message: string };

// Out here, not in the describe: its afterAll closes its client before this stops Redis.
const redisServer = useRedisServer();

describe('embedded store matches the Lua scripts', () => {
  const clock = new VirtualClock();
  let redis: LimiterFixture;
  let memory: LimiterFixture;
  const report: string[] = [];

  beforeAll(async () => {
    // Semantics, not deadlines: a busy machine must not turn a decision into a 503; and the
    // stores themselves are compared, with no deny cache answering in front of them.
    const options = { clock: clock.read, timeout: 5_000, denyCache: false };
    redis = await new LimiterFixture('redis', redisServer.server.url, options).ready();
    memory = new LimiterFixture('memory', undefined, options);
  });
  afterAll(async () => {
    await Promise.all([redis.close(), memory.close()]);
    console.info(
      [
        'seed | times | decisions | admitted | denied | at a window edge | at an announced retry time | peeks | resets | impossible costs | denials with a block duration | refunds | refunds of an earlier charge',
        ...report,
      ].join('\n'),
    );
  });

  const cases = [
    ...WHOLE_MS_SEEDS.map((seed) => [seed, 'whole ms'] as const),
    ...FRACTIONAL_SEEDS.map((seed) => [seed, 'fractional'] as const),
  ];

  it.each(cases)(
    'trace with seed %i on %s: identical answers, step by step',
    async (seed, times) => {
      const whole = times === 'whole ms';
      const next = seededRandom(seed);
      const blocks = seededRandom(seed + 1_000);
      // Refunds draw apart too, between the other draws' steps.
      const refunds = seededRandom(seed + 2_000);
      const charges: { key: string; route: RateLimitPolicy[]; charge: Charge }[] = [];
      const routes = Array.from({ length: 4 }, (_, route) => randomPolicies(next, route, blocks));
      const clients = ['alice', 'bob', 'carol'].map((name) => `${name}-${seed}`);
      const counts: TraceCounts = {
        decisions: 0,
        admitted: 0,
        denied: 0,
        windowEdges: 0,
        retryTimes: 0,
        peeks: 0,
        resets: 0,
        impossible: 0,
        blocks: 0,
        refunds: 0,
        chargeRefunds: 0,
      };
      const toTime = (ms: number) => (whole ? Math.floor(ms) : ms);
      clock.set(1_700_000_000_000 + toTime(next() * 10_000));

      let step = 0;
      /** Runs one operation on both stores; answers (or refusals) must be identical. */
      const onBoth = async (ask: (limiter: RateLimiter) => Promise<RateLimitDecision>) => {
        const [fromRedis, fromMemory] = await Promise.all(
          [redis, memory].map(({ limiter }) =>
            ask(limiter).then(
              (decision): Answer => decision,
              (error: { status?: number; message?: string }): Answer => ({
                rejected: error.status ?? -1,
                message: String(error.message),
              }),
            ),
          ),
        );
        expect({ step, ...fromMemory }).toEqual({ step, ...fromRedis });
        return fromRedis;
      };
      const decide = async (
        mode: 'consume' | 'peek',
        key: string,
        policies: RateLimitPolicy[],
        cost: number,
      ) => {
        const now = clock.now;
        if (whole) expect(Number.isInteger(now)).toBe(true);
        const answer = await onBoth((limiter) => limiter[mode](key, policies, cost));
        if (!('allowed' in answer)) return answer;
        if (mode === 'consume' && answer.allowed) {
          // Kept as the guard keeps a charge; resolved by each limiter for its own call.
          const charge = {
            clientKeys: policies.map(() => key),
            costs: policies.map(() => cost),
            decision: answer,
            instant: now,
          };
          charges.push({ key, route: policies, charge: { ...charge, policies: [] } });
          if (charges.length > 20) charges.shift();
        }
        counts.decisions++;
        counts[answer.allowed ? 'admitted' : 'denied']++;
        if (!answer.allowed && policies.some((p) => p.blockDuration)) counts.blocks++;
        if (mode === 'peek') counts.peeks++;
        const atEdge = policies.some(
          (p) => WINDOWED.has(p.algorithm!) && now % (p.window as number) === 0,
        );
        if (atEdge) counts.windowEdges++;
        return answer;
      };

      /** Gives back the latest charge, or a kept earlier one, on both stores alike. */
      const refund = async () => {
        const resolved = (limiter: RateLimiter, route: RateLimitPolicy[]) =>
          (limiter as unknown as { resolve(p: unknown): ResolvedPolicy[] }).resolve(route);
        const pick = <T>(items: readonly T[]) => items[Math.floor(refunds() * items.length)];
        const earlier = refunds() < 0.5 ? pick(charges) : undefined;
        const route = earlier?.route ?? pick(routes);
        const key = earlier?.key ?? pick(clients);
        const cost = 1 + Math.floor(refunds() * 3);
        const which = route.map((_, i) => i).filter(() => refunds() < 0.7);
        await onBoth(async (limiter) => {
          if (earlier) {
            const charge = { ...earlier.charge, policies: resolved(limiter, route) };
            await limiter.refundCharge(charge, which);
          } else {
            await limiter.refund(key, route, cost);
          }
          // What a refund changes shows in a peek of the route right after it.
          return limiter.peek(key, route, 1);
        });
        counts[earlier ? 'chargeRefunds' : 'refunds']++;
      };

      for (; step < STEPS; step++) {
        if (refunds() < 0.15) await refund();
        const roll = next();
        if (roll < 0.12) {
          // Straight onto the next window edge of one of a route's policies.
          const policies = routes[Math.floor(next() * routes.length)];
          const window = policies[Math.floor(next() * policies.length)].window as number;
          clock.set((Math.floor(clock.now / window) + 1) * window);
        } else {
          // Mostly small steps (bursts within a window), sometimes long gaps, sometimes none.
          const gap = next() < 0.4 ? 0 : next() < 0.9 ? next() * 120 : next() * 8_000;
          clock.advance(toTime(gap));
        }
        const route = routes[Math.floor(next() * routes.length)];
        const key = clients[Math.floor(next() * clients.length)];
        const operation = next();
        if (operation < 0.04) {
          await Promise.all([redis, memory].map(({ limiter }) => limiter.reset(key, route)));
          counts.resets++;
          continue;
        }
        const maxCost = maxCostOf(route);
        const impossible = operation < 0.1;
        const cost = impossible
          ? maxCost + 1 + Math.floor(next() * 2)
          : 1 + Math.floor(next() * Math.min(maxCost, 3));
        const mode = next() < 0.15 ? 'peek' : 'consume';
        const answer = await decide(mode, key, route, cost);
        if (impossible) {
          counts.impossible++;
          // Denied, charging nothing, with a retry that never comes.
          expect(answer).toMatchObject({ allowed: false });
          const { results } = answer as RateLimitDecision;
          expect(Math.max(...results.map((result) => result.retryAfterMs))).toBe(Infinity);
          continue;
        }
        if (!('allowed' in answer) || answer.allowed || next() < 0.2) continue;

        // Denied: jump to the retry time it announced. On whole-ms traces that is the next
        // whole ms; there the same request must pass, and a millisecond before, not yet. On
        // fractional traces, now + retry is rounded to a double (about 0.24 µs apart at
        // today's epoch) and may fall just short; a microsecond later it must pass.
        const retryMs = Math.max(...answer.results.map((result) => result.retryAfterMs));
        const retryAt = whole ? Math.ceil(clock.now + retryMs) : clock.now + retryMs;
        if (whole && retryAt - 1 > clock.now) {
          clock.set(retryAt - 1);
          expect(await decide('peek', key, route, cost)).toMatchObject({ allowed: false });
        }
        clock.set(retryAt);
        const atRetry = await decide('consume', key, route, cost);
        if (!whole && 'allowed' in atRetry && !atRetry.allowed) {
          clock.advance(0.001);
          expect(await decide('consume', key, route, cost)).toMatchObject({ allowed: true });
        } else {
          expect(atRetry).toMatchObject({ allowed: true });
        }
        counts.retryTimes++;
      }

      report.push(
        `${seed} | ${times} | ${counts.decisions} | ${counts.admitted} | ${counts.denied} | ` +
          `${counts.windowEdges} | ${counts.retryTimes} | ${counts.peeks} | ${counts.resets} | ` +
          `${counts.impossible} | ${counts.blocks} | ${counts.refunds} | ${counts.chargeRefunds}`,
      );
      // A trace that misses a kind of boundary or operation would compare nothing there.
      expect(counts.admitted).toBeGreaterThan(STEPS / 40);
      expect(counts.denied).toBeGreaterThan(STEPS / 40);
      const kinds = [
        'windowEdges',
        'retryTimes',
        'peeks',
        'resets',
        'impossible',
        'blocks',
        'refunds',
        'chargeRefunds',
      ] as const;
      for (const kind of kinds) {
        expect({ [kind]: counts[kind] >= AT_LEAST }).toEqual({ [kind]: true });
      }
    },
  );
});
