import { Controller, Get } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import {
  RateLimit,
  RateLimiter,
  RateLimitUnavailableException,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { METRIC_NAMES } from '../../lib/observability/rate-limit-metrics.js';
import { collectingMeter } from '../support/metric-reader.js';
import { OnceController } from '../support/once-controller.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { sendRawCommand, startRedisServer } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  type RunningApp,
  sequentially,
  startApp,
  withApp,
} from '../support/test-app.js';

@Controller()
class MeteredController {
  @Get('queued')
  @RateLimit({ name: 'queue', algorithm: 'leaky-bucket', limit: 10, window: '1s', burst: 5 })
  queued() {
    return 'ok';
  }

  @Get('trial')
  @RateLimit(
    { name: 'main', algorithm: 'fixed-window', limit: 10, window: '1m' },
    { name: 'trial', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
  )
  trial() {
    return 'ok';
  }
}

const redis = useRedisServer();

/** One /once answered by the store (its 'once' then near its limit), three failing open. */
const ANSWERED_THEN_THREE_FAILED_OPEN = {
  'decisions OnceController.once wide allowed': 1,
  'decisions OnceController.once once allowed': 1,
  'decisions OnceController.once wide failed_open': 3,
  'decisions OnceController.once once failed_open': 3,
  'near_limit_decisions OnceController.once once': 1,
  'store.operation.duration': 1,
};

let client = 0;
const nextClient = () => `metrics-${++client}-${Date.now()}`;

describe.each<AdapterKind>(['express', 'fastify'])('metrics over HTTP with %s', (adapter) => {
  const boot = (options: RateLimitModuleOptions) =>
    startApp(
      adapter,
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `metrics-${adapter}`,
          keyBy: byClientHeader,
          ...options,
        }),
      ],
      [MeteredController, OnceController],
    );

  it('counts a scripted sequence exactly: decisions by route, policy and outcome, near-limit admissions, store calls', async () => {
    const { meterProvider, counts } = collectingMeter();
    // Frozen: on a real clock the second /queued, if it came a leak (100 ms) after the first on
    // a busy machine, found the queue drained and was allowed, not delayed; and a minute's
    // end between two requests to /once or /trial would start their windows over.
    const clock = () => 1_750_000_000_000;
    await withApp(boot({ metrics: { meterProvider }, clock }), async (running) => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/once', who))).toEqual([200, 429, 429]);
      expect(await sequentially(2, () => running.get('/queued', who))).toEqual([200, 200]);
      expect(await sequentially(2, () => running.get('/trial', who))).toEqual([200, 200]);
      expect(await counts()).toEqual({
        'decisions OnceController.once wide allowed': 1,
        'decisions OnceController.once once allowed': 1,
        'decisions OnceController.once wide denied': 1,
        'decisions OnceController.once once denied': 1,
        'decisions OnceController.once wide denied_cached': 1,
        'decisions OnceController.once once denied_cached': 1,
        'decisions MeteredController.queued queue allowed': 1,
        'decisions MeteredController.queued queue delayed': 1,
        'decisions MeteredController.trial main allowed': 2,
        'decisions MeteredController.trial trial allowed': 1,
        'decisions MeteredController.trial trial shadow_denied': 1,
        // 'once' left 0 of 1; the shadow 'trial' left 0 of 1; nothing else came within 20%.
        'near_limit_decisions OnceController.once once': 1,
        'near_limit_decisions MeteredController.trial trial': 1,
        // The deny cache answered the third /once; each /trial is two store calls (a
        // shadow policy is decided apart).
        'store.operation.duration': 8,
      });
    });
  });

  it('counts near-limit admissions at the configured share', async () => {
    const { meterProvider, counts } = collectingMeter();
    await withApp(boot({ metrics: { meterProvider, nearLimitShare: 0.6 } }), async (running) => {
      // 'main' leaves 9, 8, 7, 6, 5 of 10: at most 6 (60%) from the fourth request on; the
      // shadow 'trial' leaves 0 of 1, then would deny.
      const who = nextClient();
      expect(await sequentially(5, () => running.get('/trial', who))).toEqual([
        200, 200, 200, 200, 200,
      ]);
      const near = Object.entries(await counts()).filter(([line]) => line.startsWith('near'));
      expect(Object.fromEntries(near)).toEqual({
        'near_limit_decisions MeteredController.trial main': 2,
        'near_limit_decisions MeteredController.trial trial': 1,
      });
    });
  });

  it('counts dry_run_denied under dryRun', async () => {
    const { meterProvider, counts } = collectingMeter();
    await withApp(boot({ metrics: { meterProvider }, dryRun: true }), async (running) => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/once', who))).toEqual([200, 200, 200]);
      expect(await counts()).toMatchObject({
        'decisions OnceController.once wide dry_run_denied': 2,
        'decisions OnceController.once once dry_run_denied': 2,
        // No deny cache in a dry run: every request asks the store.
        'store.operation.duration': 3,
      });
    });
  });

  it('counts failed_open and failed_closed, and store failures by kind, through an outage; names and units', async () => {
    const failing = await startRedisServer();
    const open = collectingMeter();
    const closed = collectingMeter();
    // One failure opens the breaker for longer than the test: then every call is refused.
    const breaker = { failures: 1, halfOpenAfter: 60_000 };
    const apps: RunningApp[] = [];
    try {
      apps.push(
        await boot({ redis: failing.url, metrics: { meterProvider: open.meterProvider } }),
        await boot({
          redis: failing.url,
          failureMode: 'closed',
          breaker,
          metrics: { meterProvider: closed.meterProvider },
        }),
      );
      const [openApp, closedApp] = apps;
      expect((await openApp.get('/once', nextClient())).status).toBe(200);
      await failing.kill();
      expect(await sequentially(3, () => openApp.get('/once', nextClient()))).toEqual([
        200, 200, 200,
      ]);
      expect(await sequentially(3, () => closedApp.get('/trial', nextClient()))).toEqual([
        503, 503, 503,
      ]);
      // Through the service: a failed call counts as a store failure too.
      await expect(
        openApp.app.get(RateLimiter).consume('service', { limit: 1, window: '1m' }),
      ).rejects.toThrow(RateLimitUnavailableException);

      expect(await open.counts()).toEqual({
        ...ANSWERED_THEN_THREE_FAILED_OPEN,
        // A connection refused fails fast: it never opens the breaker, so the service's call
        // is put to the store too.
        'store.operation.duration disconnected': 4,
        'store.failures disconnected': 4,
      });
      expect(await closed.counts()).toEqual({
        'decisions MeteredController.trial main failed_closed': 3,
        'decisions MeteredController.trial trial failed_closed': 3,
        // Each /trial sends its two calls together; all fail fast, none opens the breaker.
        'store.operation.duration disconnected': 6,
        'store.failures disconnected': 6,
      });
      const { resourceMetrics } = await open.reader.collect();
      expect(resourceMetrics.scopeMetrics.map((scope) => scope.scope.name)).toEqual([
        'nestjs-redis-rate-limiter',
      ]);
      expect(
        resourceMetrics.scopeMetrics[0].metrics.map(
          ({ descriptor: { name, unit }, dataPointType }) => ({ name, unit, dataPointType }),
        ),
      ).toEqual([
        { name: METRIC_NAMES.decisions, unit: '{decision}', dataPointType: DataPointType.SUM },
        { name: METRIC_NAMES.nearLimit, unit: '{decision}', dataPointType: DataPointType.SUM },
        { name: METRIC_NAMES.storeDuration, unit: 's', dataPointType: DataPointType.HISTOGRAM },
        { name: METRIC_NAMES.storeFailures, unit: '{failure}', dataPointType: DataPointType.SUM },
      ]);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
      await failing.stop();
    }
  });

  it("counts failureMode 'local' decisions as allowed and denied, and the store's failures", async () => {
    const failing = await startRedisServer();
    const { meterProvider, counts } = collectingMeter();
    try {
      await withApp(
        boot({
          redis: failing.url,
          failureMode: 'local',
          instances: 1,
          metrics: { meterProvider },
        }),
        async (running) => {
          await failing.kill();
          const who = nextClient();
          expect(await sequentially(2, () => running.get('/once', who))).toEqual([200, 429]);
        },
      );
      expect(await counts()).toEqual({
        'decisions OnceController.once wide allowed': 1,
        'decisions OnceController.once once allowed': 1,
        'decisions OnceController.once wide denied': 1,
        'decisions OnceController.once once denied': 1,
        'near_limit_decisions OnceController.once once': 1,
        'store.operation.duration disconnected': 2,
        'store.failures disconnected': 2,
      });
    } finally {
      await failing.stop();
    }
  });

  it('counts a silent store as timeout and an erroring one as error', async () => {
    const failing = await startRedisServer();
    const { meterProvider, counts } = collectingMeter();
    try {
      await withApp(
        boot({ redis: failing.url, breaker: false, metrics: { meterProvider } }),
        async (running) => {
          expect((await running.get('/once', nextClient())).status).toBe(200);
          await failing.pause(3_000);
          expect((await running.get('/once', nextClient())).status).toBe(200);
          // Answered once awake; then scripts are forbidden: each call gets a NOPERM error.
          await sendRawCommand(failing.port, ['ACL', 'SETUSER', 'default', '-@scripting'], 5_000);
          expect(await sequentially(2, () => running.get('/once', nextClient()))).toEqual([
            200, 200,
          ]);
        },
      );
      expect(await counts()).toEqual({
        ...ANSWERED_THEN_THREE_FAILED_OPEN,
        'store.operation.duration timeout': 1,
        'store.operation.duration error': 2,
        'store.failures timeout': 1,
        'store.failures error': 2,
      });
    } finally {
      await failing.stop();
    }
  });
});

describe('metrics through the global MeterProvider', () => {
  afterEach(() => metrics.disable());

  it('metrics: true counts on the MeterProvider registered globally; an app started again counts on', async () => {
    const { meterProvider, counts } = collectingMeter();
    metrics.setGlobalMeterProvider(meterProvider);
    // Twice in one process, as tests and hot reloads start apps: the counts add up.
    for (const policy of ['first', 'second']) {
      await withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              redis: redis.server.url,
              prefix: 'metrics-global',
              keyBy: byClientHeader,
              metrics: true,
            }),
          ],
          [MeteredController, OnceController],
        ),
        async (running) => {
          expect((await running.get('/queued', `${policy}-${nextClient()}`)).status).toBe(200);
          // The service's calls are timed too.
          await running.app.get(RateLimiter).consume(policy, { limit: 1, window: '1m' });
        },
      );
    }
    expect(await counts()).toEqual({
      'decisions MeteredController.queued queue allowed': 2,
      'store.operation.duration': 4,
    });
  });

  it.each([
    [{ metrics: 'on' }, 'must be true, false or'],
    [{ metrics: { nearLimitShare: 1.5 } }, 'nearLimitShare must be a number from 0 to 1'],
    [{ metrics: { meterProvider: {} } }, 'meterProvider must be an OpenTelemetry MeterProvider'],
  ])('refuses to start with %j', async (options, problem) => {
    await expect(
      startApp(
        'express',
        [RateLimitModule.forRoot(options as never)],
        [MeteredController, OnceController],
      ),
    ).rejects.toThrow(`Invalid RateLimitModule option metrics: ${problem}`);
  });
});
