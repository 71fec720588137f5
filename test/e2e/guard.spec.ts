import { Controller, Get, UseFilters } from '@nestjs/common';
import {
  MemoryStore,
  RateLimit,
  RateLimitExceededException,
  RateLimitExceptionFilter,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
  type RateLimitStore,
  SkipRateLimit,
} from '../../lib/index.js';
import { VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  RecordingLogger,
  sequentially,
  type RunningApp,
  startApp,
  withApp,
} from '../support/test-app.js';

@Controller('limited')
@RateLimit({ name: 'class', algorithm: 'fixed-window', limit: 3, window: '1m' })
class LimitedController {
  @Get('inherits')
  inherits() {
    return 'ok';
  }

  @Get('own')
  @RateLimit({ name: 'own', algorithm: 'sliding-window-log', limit: 1, window: '1m' })
  own() {
    return 'ok';
  }

  @Get('skipped')
  @SkipRateLimit()
  skipped() {
    return 'ok';
  }
}

@Controller()
class RoutesController {
  @Get('unannotated-1')
  unannotated1() {
    return 'ok';
  }

  @Get('unannotated-2')
  unannotated2() {
    return 'ok';
  }

  @Get('multi')
  @RateLimit(
    { name: 'wide', algorithm: 'fixed-window', limit: 5, window: '1m' },
    { name: 'narrow', algorithm: 'sliding-window-log', limit: 2, window: '1m' },
  )
  multi() {
    return 'ok';
  }

  @Get('per-route-1')
  @RateLimit({ limit: 2, window: '1m' })
  perRoute1() {
    return 'ok';
  }

  @Get('per-route-2')
  @RateLimit({ limit: 2, window: '1m' })
  perRoute2() {
    return 'ok';
  }

  @Get('shared-1')
  @RateLimit({ name: 'shared', scope: 'global', limit: 2, window: '1m' })
  shared1() {
    return 'ok';
  }

  @Get('shared-2')
  @RateLimit({ name: 'shared', scope: 'global', limit: 2, window: '1m' })
  shared2() {
    return 'ok';
  }

  @Get('queued')
  @RateLimit({ algorithm: 'leaky-bucket', limit: 10, window: '1s', burst: 3 })
  queued() {
    return 'ok';
  }

  @Get('weighted')
  @RateLimit({
    limit: 10,
    window: '1m',
    cost: (context) =>
      Number(context.switchToHttp().getRequest<{ query: { units: string } }>().query.units),
  })
  weighted() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({ algorithm: 'token-bucket', limit: 2, window: '1s', burst: 5 })
  bucket() {
    return 'ok';
  }

  @Get('skip-one')
  @RateLimit(
    { name: 'kept', algorithm: 'fixed-window', limit: 1, window: '1m' },
    { name: 'dropped', algorithm: 'fixed-window', limit: 1, window: '1m' },
  )
  @SkipRateLimit('dropped')
  skipOne() {
    return 'ok';
  }
}

/** Two controllers inheriting one handler: each keeps its own policies and budget. */
class InheritedListing {
  @Get('list')
  list() {
    return 'ok';
  }
}

@Controller('strict-listing')
@RateLimit({ limit: 1, window: '1m' })
class StrictListingController extends InheritedListing {}

@Controller('loose-listing')
@RateLimit({ limit: 5, window: '1m' })
class LooseListingController extends InheritedListing {}

@Controller('mostly-open')
@SkipRateLimit()
class MostlyOpenController {
  @Get('open')
  open() {
    return 'ok';
  }

  @Get('limited')
  @RateLimit({ limit: 1, window: '1m' })
  limited() {
    return 'ok';
  }

  @Get('oversized')
  @RateLimit({ limit: 1, window: '1m', cost: () => 5 })
  oversized() {
    return 'ok';
  }
}

const statuses = async (responses: Promise<Response>[]) =>
  (await Promise.all(responses)).map((r) => r.status);
const redis = useRedisServer();
/**
 * Before a test counts on one fixed window of a minute across requests: on the Redis clock
 * the apps decide on, the minute must not turn mid-test and start the count over.
 */
const untilMinuteHasRoom = () => untilWindowHasRoom(redis.server, 60_000);

describe.each<AdapterKind>(['express', 'fastify'])('over HTTP with %s', (adapter) => {
  const boot = (options: RateLimitModuleOptions = {}) =>
    startApp(
      adapter,
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `e2e-${adapter}`,
          keyBy: byClientHeader,
          policies: [{ name: 'module', algorithm: 'fixed-window', limit: 4, window: '1m' }],
          ...options,
        }),
      ],
      [
        LimitedController,
        RoutesController,
        StrictListingController,
        LooseListingController,
        MostlyOpenController,
      ],
    );
  let client = 0;
  const nextClient = () => `client-${++client}-${Date.now()}`;

  describe('with IETF headers', () => {
    let running: RunningApp;
    beforeAll(async () => {
      running = await boot();
    });
    afterAll(() => running.close());

    it('answers 429 with Retry-After, the JSON body and RateLimit headers once the limit is spent', async () => {
      await untilMinuteHasRoom();
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/limited/inherits', who))).toEqual([
        200, 200, 200,
      ]);
      const denied = await running.get('/limited/inherits', who);
      expect(denied.status).toBe(429);
      const retryAfter = Number(denied.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(await denied.json()).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: expect.stringContaining('"class"'),
        retryAfter,
      });
      expect(denied.headers.get('ratelimit-policy')).toBe('"class";q=3;w=60');
      expect(denied.headers.get('ratelimit')).toMatch(/^"class";r=0;t=\d+$/);
    });

    it('counts down RateLimit remaining on admitted responses', async () => {
      const who = nextClient();
      const first = await running.get('/limited/inherits', who);
      expect(first.headers.get('ratelimit')).toMatch(/^"class";r=2;t=\d+$/);
    });

    it("lets a handler's policies replace its controller's, and skips what is skipped", async () => {
      await untilMinuteHasRoom();
      const who = nextClient();
      expect(await sequentially(2, () => running.get('/limited/own', who))).toEqual([200, 429]);
      expect(await sequentially(5, () => running.get('/limited/skipped', who))).toEqual([
        200, 200, 200, 200, 200,
      ]);
      expect((await running.get('/limited/skipped', who)).headers.get('ratelimit')).toBeNull();
      expect(await sequentially(2, () => running.get('/skip-one', who))).toEqual([200, 429]);
    });

    it('gives routes without @RateLimit one shared budget from the module policies', async () => {
      await untilMinuteHasRoom();
      const who = nextClient();
      const spent = await sequentially(2, () => running.get('/unannotated-1', who));
      const rest = await sequentially(3, () => running.get('/unannotated-2', who));
      expect([...spent, ...rest]).toEqual([200, 200, 200, 200, 429]);
    });

    it('keeps route-scoped budgets apart and global-scoped ones shared', async () => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/per-route-1', who))).toEqual([
        200, 200, 429,
      ]);
      expect(await sequentially(1, () => running.get('/per-route-2', who))).toEqual([200]);
      expect(await sequentially(2, () => running.get('/shared-1', who))).toEqual([200, 200]);
      expect(await sequentially(1, () => running.get('/shared-2', who))).toEqual([429]);
    });

    it('admits a multi-policy request only if all admit, charging none on denial', async () => {
      await untilMinuteHasRoom();
      const who = nextClient();
      expect(await sequentially(4, () => running.get('/multi', who))).toEqual([200, 200, 429, 429]);
      const last = await running.get('/multi', who);
      expect(last.headers.get('ratelimit')).toMatch(/^"wide";r=3;t=\d+, "narrow";r=0;t=\d+$/);
    });

    it('plans an inherited handler per controller', async () => {
      const who = nextClient();
      expect(await sequentially(2, () => running.get('/strict-listing/list', who))).toEqual([
        200, 429,
      ]);
      expect(await sequentially(2, () => running.get('/loose-listing/list', who))).toEqual([
        200, 200,
      ]);
      expect((await running.get('/loose-listing/list', who)).headers.get('ratelimit-policy')).toBe(
        '"default";q=5;w=60',
      );
    });

    it("lets a handler's @RateLimit escape its controller's @SkipRateLimit", async () => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/mostly-open/open', who))).toEqual([
        200, 200, 200,
      ]);
      expect(await sequentially(2, () => running.get('/mostly-open/limited', who))).toEqual([
        200, 429,
      ]);
    });

    it('limits clients independently', async () => {
      const results = await statuses(
        [nextClient(), nextClient(), nextClient()].map((who) => running.get('/limited/own', who)),
      );
      expect(results).toEqual([200, 200, 200]);
    });

    it('charges cost functions, answering 400 for malformed and 429 for impossible costs', async () => {
      const who = nextClient();
      expect((await running.get('/weighted?units=7', who)).headers.get('ratelimit')).toMatch(
        /r=3;/,
      );
      expect((await running.get('/weighted?units=4', who)).status).toBe(429);
      expect((await running.get('/weighted?units=abc', who)).status).toBe(400);
      const impossible = await running.get('/weighted?units=11', who);
      expect(impossible.status).toBe(429);
      // Retrying cannot help: the message says so, and Retry-After is the policy's window.
      expect(impossible.headers.get('retry-after')).toBe('60');
      expect(await impossible.json()).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: expect.stringMatching(
          /more than "default" can ever admit \(10\); retrying cannot help/,
        ),
        retryAfter: 60,
      });
      expect(impossible.headers.get('ratelimit')).toMatch(/^"default";r=3;t=\d+$/);
      expect((await running.get('/weighted?units=3', who)).status).toBe(200);
    });

    it('never shows r above q: a token bucket larger than its limit advertises its burst', async () => {
      const response = await running.get('/bucket', nextClient());
      expect(response.headers.get('ratelimit-policy')).toBe('"default";q=5;w=3');
      expect(response.headers.get('ratelimit')).toMatch(/^"default";r=4;t=1$/);
    });
  });

  it.each([
    ['legacy', { 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', ratelimit: null }],
    ['both', { 'x-ratelimit-limit': '2', ratelimit: expect.stringContaining('"narrow";r=0') }],
    ['none', { 'x-ratelimit-limit': null, ratelimit: null, 'ratelimit-policy': null }],
  ] as const)('headers: %s', async (headers, expected) => {
    await withApp(boot({ headers }), async (running) => {
      const who = nextClient();
      await running.get('/multi', who);
      const response = await running.get('/multi', who);
      const seen = Object.fromEntries(
        Object.keys(expected).map((name) => [name, response.headers.get(name)]),
      );
      expect(seen).toEqual(expected);
      if (headers === 'legacy')
        expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    });
  });

  it('holds leaky-bucket requests for their delay before the handler runs', async () => {
    // Frozen: on a real clock, arrivals spread over more than the leak (100 ms) on a busy
    // machine found the queue partly drained, and let a fourth or a fifth through.
    const clock = () => 1_750_000_000_000;
    await withApp(boot({ clock }), async (running) => {
      const who = nextClient();
      const started = performance.now();
      const results = await statuses([0, 1, 2, 3, 4].map(() => running.get('/queued', who)));
      // A queue of three at 100 ms intervals, all five arriving at one instant: three
      // admitted (delays 0, 100 and 200 ms), then two denied.
      expect(results.filter((status) => status === 200)).toHaveLength(3);
      expect(results.filter((status) => status === 429)).toHaveLength(2);
      // The third held its 200 ms, less the ms a timer may fire early by performance.now():
      // held only 100 ms (its predecessor's delay) or not at all, this fails.
      expect(performance.now() - started).toBeGreaterThanOrEqual(198);
    });
  });

  it('dryRun decides and sets headers but never blocks', async () => {
    await withApp(boot({ dryRun: true }), async (running) => {
      const who = nextClient();
      const results = await sequentially(3, () => running.get('/limited/own', who));
      expect(results).toEqual([200, 200, 200]);
      expect((await running.get('/limited/own', who)).headers.get('ratelimit')).toMatch(
        /^"own";r=0;/,
      );
      expect((await running.get('/mostly-open/oversized', who)).status).toBe(200);
    });
  });

  it('skip option exempts matching requests', async () => {
    await withApp(
      boot({ skip: (context) => byClientHeader(context).startsWith('vip') }),
      async (running) => {
        expect(
          await sequentially(3, () => running.get('/limited/own', `vip-${nextClient()}`)),
        ).toEqual([200, 200, 200]);
      },
    );
  });

  it('guard: false registers no global guard', async () => {
    await withApp(boot({ guard: false }), async (running) => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/limited/own', who))).toEqual([
        200, 200, 200,
      ]);
    });
  });

  it('overrideProvider(RateLimitGuard) turns limiting off in tests', async () => {
    await withApp(
      startApp(
        adapter,
        [RateLimitModule.forRoot({ redis: redis.server.url, keyBy: byClientHeader })],
        [LimitedController],
        {
          customize: (builder) =>
            builder.overrideProvider(RateLimitGuard).useValue({ canActivate: () => true }),
        },
      ),
      async (running) => {
        const who = nextClient();
        expect(await sequentially(3, () => running.get('/limited/own', who))).toEqual([
          200, 200, 200,
        ]);
      },
    );
  });

  it('forRootAsync takes options from a factory with injected dependencies', async () => {
    await withApp(
      startApp(
        adapter,
        [
          RateLimitModule.forRootAsync({
            useFactory: async () => ({
              redis: redis.server.url,
              keyBy: byClientHeader,
              headers: 'legacy' as const,
            }),
          }),
        ],
        [LimitedController],
      ),
      async (running) => {
        const who = nextClient();
        const results = await sequentially(2, () => running.get('/limited/own', who));
        expect(results).toEqual([200, 429]);
        expect((await running.get('/limited/own', who)).headers.get('x-ratelimit-limit')).toBe('1');
      },
    );
  });

  it("decides on a store of the user's own, and leaves closing it to them", async () => {
    const inner = new MemoryStore();
    const seen: string[][] = [];
    const store: RateLimitStore = {
      decide: (request) => (seen.push([...request.keys]), inner.decide(request)),
      reset: (keys) => inner.reset(keys),
      close: () => Promise.reject(new Error('the module must not close a store it was given')),
    };
    const running = await startApp(
      adapter,
      [RateLimitModule.forRoot({ store, keyBy: byClientHeader })],
      [LimitedController],
    );
    const who = nextClient();
    expect(await sequentially(2, () => running.get('/limited/own', who))).toEqual([200, 429]);
    expect(seen).toEqual([
      [`rl:{${who}}:own:swl:LimitedController.own`],
      [`rl:{${who}}:own:swl:LimitedController.own`],
    ]);
    await running.close();
    await inner.close();
  });

  it('answers a known denial from the deny cache: the same 429, counted down', async () => {
    const inner = new MemoryStore();
    let sent = 0;
    const store: RateLimitStore = {
      decide: (request) => (sent++, inner.decide(request)),
      reset: (keys) => inner.reset(keys),
      close: () => inner.close(),
    };
    const clock = new VirtualClock(1_700_000_000_000);
    await withApp(
      startApp(
        adapter,
        [RateLimitModule.forRoot({ store, keyBy: byClientHeader, clock: clock.read })],
        [LimitedController],
      ),
      async (running) => {
        const who = nextClient();
        expect((await running.get('/limited/own', who)).status).toBe(200);
        const fromStore = await running.get('/limited/own', who);
        clock.advance(15_000);
        const fromCache = await running.get('/limited/own', who);
        expect(sent).toBe(2);
        const seen = async (response: Response) => ({
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          policy: response.headers.get('ratelimit-policy'),
          rateLimit: response.headers.get('ratelimit'),
          body: (await response.json()) as unknown,
        });
        const message = (seconds: number) => `Rate limit exceeded ("own"); retry in ${seconds} s.`;
        expect(await seen(fromStore)).toEqual({
          status: 429,
          retryAfter: '60',
          policy: '"own";q=1;w=60',
          rateLimit: '"own";r=0;t=60',
          body: {
            statusCode: 429,
            error: 'Too Many Requests',
            message: message(60),
            retryAfter: 60,
          },
        });
        expect(await seen(fromCache)).toEqual({
          status: 429,
          retryAfter: '45',
          policy: '"own";q=1;w=60',
          rateLimit: '"own";r=0;t=45',
          body: {
            statusCode: 429,
            error: 'Too Many Requests',
            message: message(45),
            retryAfter: 45,
          },
        });
      },
    );
    await inner.close();
  });

  it('RateLimitExceptionFilter renders the exceptions your own code throws, Retry-After included', async () => {
    @Controller('own-code')
    @UseFilters(RateLimitExceptionFilter)
    class OwnCodeController {
      @Get()
      @SkipRateLimit()
      refuse(): never {
        throw new RateLimitExceededException('Try later', 7);
      }
    }
    await withApp(
      startApp(
        adapter,
        [RateLimitModule.forRoot({ redis: redis.server.url })],
        [OwnCodeController],
      ),
      async (running) => {
        const response = await running.get('/own-code');
        expect(response.status).toBe(429);
        expect(response.headers.get('retry-after')).toBe('7');
        expect(await response.json()).toEqual({
          statusCode: 429,
          error: 'Too Many Requests',
          message: 'Try later',
          retryAfter: 7,
        });
      },
    );
  });

  it('forRootAsync takes options from a class (useClass)', async () => {
    class OptionsFactory implements RateLimitOptionsFactory {
      createRateLimitOptions(): RateLimitModuleOptions {
        return { redis: redis.server.url, prefix: `async-class-${adapter}`, keyBy: byClientHeader };
      }
    }
    await withApp(
      startApp(
        adapter,
        [RateLimitModule.forRootAsync({ useClass: OptionsFactory })],
        [LimitedController],
      ),
      async (running) => {
        const who = nextClient();
        expect(await sequentially(2, () => running.get('/limited/own', who))).toEqual([200, 429]);
      },
    );
  });

  it('serves from the embedded store when no redis is configured, warning that limits are per process', async () => {
    const logger = new RecordingLogger();
    const running = await startApp(
      adapter,
      [RateLimitModule.forRoot({ keyBy: byClientHeader })],
      [LimitedController],
      {
        customize: (builder) => builder.setLogger(logger),
      },
    );
    expect(logger.warnings).toEqual([expect.stringContaining('limits are per process')]);
    try {
      const who = nextClient();
      expect(await sequentially(2, () => running.get('/limited/own', who))).toEqual([200, 429]);
    } finally {
      await running.close();
    }
  });
});
