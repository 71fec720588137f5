import { Controller, Get } from '@nestjs/common';
import {
  RateLimit,
  RateLimitModule,
  type RateLimitDecisionEvent,
  type RateLimitModuleOptions,
  SkipRateLimit,
} from '../../lib/index.js';
import { withRedisDown } from '../support/limiters.js';
import { ONCE_WINDOW_MS, OnceController } from '../support/once-controller.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  RecordingLogger,
  sequentially,
  startApp,
  withApp,
} from '../support/test-app.js';

@Controller()
class HookedController {
  @Get('queued')
  @RateLimit({ algorithm: 'leaky-bucket', limit: 10, window: '1s', burst: 3 })
  queued() {
    return 'ok';
  }

  @Get('free')
  @SkipRateLimit()
  free() {
    return 'ok';
  }
}

const redis = useRedisServer();
/** A client's second request to /once is denied only within the Redis clock's same window. */
const untilOnceWindowHasRoom = () => untilWindowHasRoom(redis.server, ONCE_WINDOW_MS);

describe.each<AdapterKind>(['express', 'fastify'])('onDecision over HTTP with %s', (adapter) => {
  const boot = (options: RateLimitModuleOptions, logger?: RecordingLogger) =>
    startApp(
      adapter,
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `hook-${adapter}`,
          keyBy: byClientHeader,
          ...options,
        }),
      ],
      [HookedController, OnceController],
      { logger },
    );
  let client = 0;
  const nextClient = () => `hook-${++client}-${Date.now()}`;
  /** Records every event, keeping only what can be compared. */
  const recorder = () => {
    const events: Omit<RateLimitDecisionEvent, 'context' | 'error'>[] = [];
    const contexts: string[] = [];
    const errors: unknown[] = [];
    const onDecision = ({ context, error, ...event }: RateLimitDecisionEvent) => {
      events.push(event);
      contexts.push(context.getType());
      errors.push(error);
    };
    return { events, contexts, errors, onDecision };
  };

  it('reports allowed, denied and denied_cached with route, policies, keys and results; never skipped requests', async () => {
    const { events, contexts, errors, onDecision } = recorder();
    await withApp(boot({ onDecision }), async (running) => {
      await untilOnceWindowHasRoom();
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/once', who))).toEqual([200, 429, 429]);
      expect((await running.get('/free', who)).status).toBe(200);
    });
    const common = {
      route: 'OnceController.once',
      policies: ['wide', 'once'],
      keys: [expect.stringMatching(/^hook-/), expect.stringMatching(/^hook-/)],
    };
    const result = (policy: string, allowed: boolean, remaining: number) =>
      expect.objectContaining({ policy, allowed, remaining });
    expect(events).toEqual([
      {
        ...common,
        outcome: 'allowed',
        outcomes: ['allowed', 'allowed'],
        results: [result('wide', true, 4), result('once', true, 0)],
      },
      {
        ...common,
        outcome: 'denied',
        outcomes: ['denied', 'denied'],
        results: [result('wide', true, 4), result('once', false, 0)],
      },
      {
        ...common,
        outcome: 'denied_cached',
        outcomes: ['denied_cached', 'denied_cached'],
        results: [result('wide', true, 4), result('once', false, 0)],
      },
    ]);
    expect(contexts).toEqual(['http', 'http', 'http']);
    expect(errors).toEqual([undefined, undefined, undefined]);
  });

  it('reports a leaky-bucket wait as delayed', async () => {
    const { events, onDecision } = recorder();
    // Frozen: on a real clock a second request slower than the leak (100 ms) would find the
    // bucket drained and pass undelayed.
    const clock = () => 1_750_000_000_000;
    await withApp(boot({ onDecision, clock }), async (running) => {
      const who = nextClient();
      expect(await sequentially(2, () => running.get('/queued', who))).toEqual([200, 200]);
    });
    expect(events.map((event) => event.outcome)).toEqual(['allowed', 'delayed']);
    expect(events.map((event) => event.results[0].delayMs)).toEqual([0, 100]);
  });

  it('reports dry_run_denied under dryRun', async () => {
    const { events, onDecision } = recorder();
    await withApp(boot({ onDecision, dryRun: true }), async (running) => {
      await untilOnceWindowHasRoom();
      const who = nextClient();
      expect(await sequentially(2, () => running.get('/once', who))).toEqual([200, 200]);
    });
    expect(events.map((event) => event.outcome)).toEqual(['allowed', 'dry_run_denied']);
  });

  it('reports failed_open and failed_closed with the store error when Redis is down', async () => {
    const open = recorder();
    const closed = recorder();
    await withRedisDown(
      (options) =>
        boot({
          ...options,
          onDecision: options.failureMode === 'closed' ? closed.onDecision : open.onDecision,
        }),
      async (openApp, closedApp) => {
        expect((await openApp.get('/once', nextClient())).status).toBe(200);
        expect((await closedApp.get('/once', nextClient())).status).toBe(503);
      },
    );
    for (const [{ events, errors }, outcome] of [
      [open, 'failed_open'],
      [closed, 'failed_closed'],
    ] as const) {
      expect(events).toEqual([
        expect.objectContaining({ outcome, outcomes: [outcome, outcome], results: [] }),
      ]);
      expect(errors).toEqual([expect.objectContaining({ retryAfter: expect.any(Number) })]);
    }
  });

  it('logs what the hook throws or rejects with, throttled, and answers as if it had not', async () => {
    const logger = new RecordingLogger();
    let calls = 0;
    const onDecision = () => {
      calls++;
      if (calls % 2 === 0) return Promise.reject(new Error('audit sink down')) as never;
      throw new Error('audit sink down');
    };
    await withApp(boot({ onDecision }, logger), async (running) => {
      await untilOnceWindowHasRoom();
      const who = nextClient();
      expect(await sequentially(4, () => running.get('/once', who))).toEqual([200, 429, 429, 429]);
    });
    expect(calls).toBe(4);
    expect(logger.warnings).toEqual([
      'onDecision hook failed on OnceController.once: audit sink down; the request went on',
    ]);
  });
});
