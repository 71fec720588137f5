import { Controller, type ExecutionContext, Get } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  RateLimit,
  RateLimiter,
  RateLimitConfigError,
  RateLimitModule,
  type PolicyResult,
} from '../../lib/index.js';
import type { StoreKind } from '../support/limiters.js';
import { collectingMeter } from '../support/metric-reader.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  RecordingLogger,
  type RunningApp,
  sequentially,
  startApp,
  withApp,
} from '../support/test-app.js';

/** Each client's plan, as an app would read it from its user records. */
const plans = new Map<string, string>();
const LIMITS: Record<string, number> = { free: 2, pro: 4 };
const limitOfPlan = (context: ExecutionContext) => LIMITS[plans.get(byClientHeader(context))!];

@Controller()
class PlansController {
  @Get('by-plan')
  // An hour, so that no window boundary is likely to fall within the test.
  @RateLimit({ name: 'plan', algorithm: 'fixed-window', limit: limitOfPlan, window: '1h' })
  byPlan() {
    return 'ok';
  }

  @Get('looked-up')
  @RateLimit({
    name: 'plan',
    algorithm: 'sliding-window-log',
    window: '1m',
    // As if read from a database.
    limit: async (context) => {
      await sleep(5);
      return limitOfPlan(context);
    },
  })
  lookedUp() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({
    name: 'bucket',
    algorithm: 'token-bucket',
    window: '1m',
    limit: limitOfPlan,
    burst: (context) => limitOfPlan(context) * 3,
  })
  bucket() {
    return 'ok';
  }

  @Get('mixed')
  @RateLimit(
    { name: 'fixed', algorithm: 'fixed-window', limit: 3, window: '1h' },
    { name: 'plan', algorithm: 'sliding-window-counter', limit: limitOfPlan, window: '1m' },
  )
  mixed() {
    return 'ok';
  }

  @Get('heavy')
  @RateLimit({
    name: 'plan',
    algorithm: 'fixed-window',
    limit: limitOfPlan,
    window: '1h',
    cost: 3,
  })
  heavy() {
    return 'ok';
  }

  @Get('trial')
  @RateLimit(
    { name: 'enforced', limit: 5, window: '1m' },
    { name: 'trial', limit: () => 0, window: '1m', shadow: true },
  )
  trial() {
    return 'ok';
  }

  @Get('flaky')
  @RateLimit({
    name: 'plan',
    window: '1m',
    limit: () => Promise.reject(new Error('users database unreachable')),
  })
  flaky() {
    return 'ok';
  }
}

const redis = useRedisServer();

const combinations: [AdapterKind, StoreKind][] = [
  ['express', 'redis'],
  ['fastify', 'redis'],
  ['express', 'memory'],
  ['fastify', 'memory'],
];

describe.each(combinations)(
  'limits per request over HTTP with %s on the %s store',
  (adapter, store) => {
    // The routes' fixed windows of an hour count across each test's requests, on Redis's
    // clock or the embedded store's (this machine's, the same).
    beforeEach(() => untilWindowHasRoom(redis.server, 3_600_000));
    let client = 0;
    /** A new client on `plan`. */
    const clientOn = (plan: string) => {
      const who = `${plan}-${++client}-${Date.now()}`;
      plans.set(who, plan);
      return who;
    };
    const boot = (
      logger: RecordingLogger = new RecordingLogger(),
      onDecision?: (results: readonly PolicyResult[]) => void,
      dryRun = false,
      meterProvider?: MeterProvider,
    ) =>
      startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            ...(store === 'redis' && { redis: redis.server.url }),
            prefix: `plans-${adapter}`,
            keyBy: byClientHeader,
            headers: 'both',
            onDecision: onDecision && ((event) => onDecision(event.results)),
            dryRun,
            ...(meterProvider && { metrics: { meterProvider, nearLimitShare: 0.5 } }),
          }),
        ],
        [PlansController],
        { logger },
      );
    const headersOf = (response: Response) =>
      ['ratelimit-policy', 'ratelimit', 'x-ratelimit-limit', 'x-ratelimit-remaining'].map((name) =>
        response.headers.get(name),
      );

    it('gives two users on different plans different limits on the same route, and says so in headers and onDecision', async () => {
      const limits: number[][] = [];
      await withApp(
        boot(undefined, (results) => limits.push(results.map((result) => result.limit))),
        async (app) => {
          const free = clientOn('free');
          const pro = clientOn('pro');
          // Interleaved: each request is sized for its own user.
          const responses: [string, Response][] = [];
          for (let i = 0; i < 5; i++) {
            for (const who of [free, pro]) responses.push([who, await app.get('/by-plan', who)]);
          }
          const statuses = (who: string) =>
            responses.filter(([user]) => user === who).map(([, response]) => response.status);
          expect(statuses(free)).toEqual([200, 200, 429, 429, 429]);
          expect(statuses(pro)).toEqual([200, 200, 200, 200, 429]);
          const [, firstFree] = responses[0];
          const [, firstPro] = responses[1];
          expect(headersOf(firstFree)).toEqual([
            '"plan";q=2;w=3600',
            expect.stringMatching(/^"plan";r=1;t=\d+$/),
            '2',
            '1',
          ]);
          expect(headersOf(firstPro)).toEqual([
            '"plan";q=4;w=3600',
            expect.stringMatching(/^"plan";r=3;t=\d+$/),
            '4',
            '3',
          ]);
          const deniedFree = responses[4][1];
          expect(deniedFree.headers.get('ratelimit-policy')).toBe('"plan";q=2;w=3600');
          expect(deniedFree.headers.get('retry-after')).toMatch(/^\d+$/);
        },
      );
      expect(limits).toEqual([[2], [4], [2], [4], [2], [4], [2], [4], [2], [4]]);
    });

    it('counts near-limit admissions against the resolved limit in metrics', async () => {
      const { meterProvider, counts } = collectingMeter();
      await withApp(boot(undefined, undefined, false, meterProvider), async (app) => {
        // Each request leaves 1 of 2 (free: within half) and 3 of 4 (pro: not).
        expect((await app.get('/by-plan', clientOn('free'))).status).toBe(200);
        expect((await app.get('/by-plan', clientOn('pro'))).status).toBe(200);
      });
      const nearLimit = Object.entries(await counts()).filter(([line]) =>
        line.startsWith('near_limit_decisions '),
      );
      expect(nearLimit).toEqual([['near_limit_decisions PlansController.byPlan plan', 1]]);
    });

    it('advertises a token bucket whose resolved burst exceeds its limit by that burst', async () => {
      await withApp(boot(), async (app) => {
        const response = await app.get('/bucket', clientOn('pro'));
        expect(response.status).toBe(200);
        // burst 12 refilled at 4 per minute: 180 s.
        expect(headersOf(response)).toEqual([
          '"bucket";q=12;w=180',
          expect.stringMatching(/^"bucket";r=11;t=\d+$/),
          '12',
          '11',
        ]);
      });
    });

    it('denies a cost beyond the resolved capacity as one no retry can help, never charged', async () => {
      await withApp(boot(), async (app) => {
        const free = clientOn('free');
        const tooHeavy = await app.get('/heavy', free);
        expect(tooHeavy.status).toBe(429);
        expect(((await tooHeavy.json()) as { message: string }).message).toBe(
          'Rate limit exceeded: this request costs more than "plan" can ever admit (2); retrying cannot help.',
        );
        plans.set(free, 'pro');
        // Nothing was charged: the whole 4 are there for a cost of 3.
        const upgraded = await app.get('/heavy', free);
        expect([upgraded.status, upgraded.headers.get('x-ratelimit-remaining')]).toEqual([
          200,
          '1',
        ]);
      });
    });

    it('awaits an async limit function', async () => {
      await withApp(boot(), async (app) => {
        const free = clientOn('free');
        const pro = clientOn('pro');
        expect(await sequentially(3, () => app.get('/looked-up', free))).toEqual([200, 200, 429]);
        expect(await sequentially(5, () => app.get('/looked-up', pro))).toEqual([
          200, 200, 200, 200, 429,
        ]);
      });
    });

    it('answers a bad limit with a 500, logs it naming route and policy, throttled, and charges nothing', async () => {
      const logger = new RecordingLogger();
      await withApp(boot(logger), async (app: RunningApp) => {
        const who = clientOn('platinum'); // no such plan: the function gives undefined
        const failures = [];
        for (let i = 0; i < 3; i++) failures.push(await app.get('/mixed', who));
        expect(failures.map((response) => response.status)).toEqual([500, 500, 500]);
        // Route and policy go to the log; the client gets Nest's default 500.
        expect(await failures[0].json()).toEqual({
          statusCode: 500,
          message: 'Internal Server Error',
        });
        expect(failures[0].headers.get('ratelimit')).toBeNull();

        // Once the plan exists, the client has every request of both policies left: the
        // 500s charged neither the failing policy nor the fixed one beside it.
        plans.set(who, 'pro');
        const after = [];
        for (let i = 0; i < 4; i++) after.push(await app.get('/mixed', who));
        expect(after.map((response) => response.status)).toEqual([200, 200, 200, 429]);
        expect(after[0].headers.get('ratelimit')).toMatch(/^"fixed";r=2;t=\d+, "plan";r=3;t=\d+$/);

        const rejected = await app.get('/flaky', clientOn('pro'));
        expect(rejected.status).toBe(500);
        // What the function threw goes to the log, not to the client.
        expect(((await rejected.json()) as { message: string }).message).toBe(
          'Internal Server Error',
        );
      });
      expect(logger.warnings.filter((warning) => warning.startsWith('Rate limit policy'))).toEqual([
        'Rate limit policy "plan" on PlansController.mixed: its limit function gave undefined, not a positive integer; nothing was charged',
        'Rate limit policy "plan" on PlansController.flaky: its limit function failed (users database unreachable); nothing was charged',
      ]);
    });

    it("answers 500 for a shadow policy's bad limit too, and under dryRun", async () => {
      await withApp(boot(), async (app) => {
        const response = await app.get('/trial', clientOn('pro'));
        expect(response.status).toBe(500);
        expect(((await response.json()) as { message: string }).message).toBe(
          'Internal Server Error',
        );
      });
      await withApp(boot(undefined, undefined, true), async (app) => {
        const response = await app.get('/by-plan', clientOn('platinum'));
        expect(response.status).toBe(500);
        expect(((await response.json()) as { message: string }).message).toBe(
          'Internal Server Error',
        );
      });
    });

    it('has the service (consume, peek, reset) refuse a function limit, which needs a request', async () => {
      await withApp(boot(), async (app) => {
        const limiter = app.app.get(RateLimiter);
        const policy = { name: 'plan', limit: limitOfPlan, window: '1m' };
        await expect(limiter.consume('someone', policy)).rejects.toThrow(RateLimitConfigError);
        await expect(limiter.reset('someone', policy)).rejects.toThrow(RateLimitConfigError);
        await expect(limiter.peek('someone', policy)).rejects.toThrow(
          'Invalid rate limit policy "plan" on RateLimiter call: limit is a function, which only RateLimitGuard can call (with the request); call it yourself and pass the number it gives',
        );
      });
    });
  },
);
