import {
  Controller,
  Get,
  Injectable,
  Module,
  Param,
  UseGuards,
  type ExecutionContext,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import {
  RateLimit,
  RateLimitExceededException,
  RateLimitGuard,
  RateLimitModule,
  SkipRateLimit,
  clientIp,
  RateLimitConfigError,
  type Algorithm,
  type RateLimitDecision,
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { startApp, withApp, type AdapterKind, type RunningApp } from '../support/test-app.js';

/**
 * docs/migrating-from-throttler.md, checked: each example of @nestjs/throttler's documentation
 * (its README and docs.nestjs.com/security/rate-limiting), written with this module as the
 * guide says, behaves as the guide says. Every app keys clients by IP, as both modules do by
 * default, so each test starts its own app and budgets never leak between tests.
 */

/** Epoch ms on a whole minute, so that windows of 1 s, 10 s and 1 min all start here. */
const T0 = 1_800_000_000_000;

const get = (running: RunningApp, path: string, headers: Record<string, string> = {}) =>
  fetch(running.url + path, { headers });

async function statuses(running: RunningApp, path: string, count: number): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; i < count; i++) seen.push((await get(running, path)).status);
  return seen;
}

const times = (count: number, status: number) => Array<number>(count).fill(status);

const header = (context: ExecutionContext, name: string): string | undefined =>
  context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[
    name
  ];

/** `{ short: 0, medium: 17 }` from `"short";r=0;t=1, "medium";r=17;t=10`. */
function remaining(response: Response): Record<string, number> {
  const header = response.headers.get('ratelimit') ?? '';
  return Object.fromEntries(
    [...header.matchAll(/"([^"]+)";r=(\d+)/g)].map(([, name, r]) => [name, Number(r)]),
  );
}

@Controller('users')
class UsersController {
  @Get()
  findAll() {
    return 'List users';
  }

  @Get(':id')
  findOne(@Param('id') id: string) {
    return `User ${id}`;
  }
}

describe('migrating from @nestjs/throttler: the guide, checked', () => {
  describe('ThrottlerModule.forRoot([{ ttl: 60000, limit: 10 }]) with ThrottlerGuard as APP_GUARD', () => {
    it("scope 'route' gives each route its own 10 a minute, as throttler does", () =>
      withApp(
        startApp(
          'express',
          [RateLimitModule.forRoot({ policies: [{ limit: 10, window: 60_000, scope: 'route' }] })],
          [UsersController],
        ),
        async (running) => {
          expect(await statuses(running, '/users', 11)).toEqual([...times(10, 200), 429]);
          expect(await statuses(running, '/users/1', 11)).toEqual([...times(10, 200), 429]);
        },
      ));

    it('without a scope, module policies are one budget shared by every route', () =>
      withApp(
        startApp(
          'express',
          [RateLimitModule.forRoot({ policies: [{ limit: 10, window: '1m' }] })],
          [UsersController],
        ),
        async (running) => {
          expect(await statuses(running, '/users', 6)).toEqual(times(6, 200));
          expect(await statuses(running, '/users/1', 5)).toEqual([...times(4, 200), 429]);
          expect((await get(running, '/users')).status).toBe(429);
        },
      ));
  });

  describe('@UseGuards(ThrottlerGuard) on some controllers only', () => {
    @Controller('users')
    @UseGuards(RateLimitGuard)
    @RateLimit({ limit: 2, window: '1m' })
    class GuardedController {
      @Get()
      findAll() {
        return 'limited';
      }
    }

    @Controller('open')
    @RateLimit({ limit: 2, window: '1m' })
    class UnguardedController {
      @Get()
      findAll() {
        return 'no guard here';
      }
    }

    it('is guard: false and @UseGuards(RateLimitGuard): only those routes are limited', () =>
      withApp(
        startApp(
          'express',
          [RateLimitModule.forRoot({ guard: false })],
          [GuardedController, UnguardedController],
        ),
        async (running) => {
          expect(await statuses(running, '/users', 3)).toEqual([200, 200, 429]);
          expect(await statuses(running, '/open', 3)).toEqual(times(3, 200));
        },
      ));
  });

  describe('multiple definitions: short 3/1 s, medium 20/10 s, long 100/1 min', () => {
    let now = T0;
    const named = (algorithm?: Algorithm): RateLimitPolicy[] => [
      { name: 'short', limit: 3, window: '1s', scope: 'route', algorithm },
      { name: 'medium', limit: 20, window: '10s', scope: 'route', algorithm },
      { name: 'long', limit: 100, window: '1m', scope: 'route', algorithm },
    ];
    const policies = named();

    it('admits a request only if all three do, and a denial costs none of them', () =>
      withApp(
        startApp(
          'express',
          [RateLimitModule.forRoot({ policies, clock: () => now })],
          [UsersController],
        ),
        async (running) => {
          now = T0;
          expect(await statuses(running, '/users', 3)).toEqual(times(3, 200));
          for (let i = 0; i < 5; i++) {
            const denied = await get(running, '/users');
            expect(denied.status).toBe(429);
            // Denied by 'short'; 'medium' and 'long' still have all they had after 3 requests.
            expect(remaining(denied)).toEqual({ short: 0, medium: 17, long: 97 });
            expect(denied.headers.get('ratelimit-policy')).toBe(
              '"short";q=3;w=1, "medium";q=20;w=10, "long";q=100;w=60',
            );
          }
        },
      ));

    it("on 'sliding-window-log', throttler's way of counting, three a second reach medium's 20 in the seventh second", () =>
      withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: named('sliding-window-log'),
              clock: () => now,
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          for (let second = 0; second <= 6; second++) {
            now = T0 + second * 1_000;
            const expected = second < 6 ? times(3, 200) : [200, 200, 429];
            expect(await statuses(running, '/users', 3)).toEqual(expected);
          }
          const denied = await get(running, '/users');
          expect(remaining(denied)).toEqual({ short: 1, medium: 0, long: 80 });
        },
      ));

    @Controller('users')
    @SkipRateLimit('short', 'medium')
    class SkipShortAndMedium {
      @Get()
      findAll() {
        return 'only long applies';
      }
    }

    it("@SkipThrottle({ short: true, medium: true }) is @SkipRateLimit('short', 'medium')", () =>
      withApp(
        startApp('express', [RateLimitModule.forRoot({ policies })], [SkipShortAndMedium]),
        async (running) => {
          const response = await get(running, '/users');
          expect(response.headers.get('ratelimit-policy')).toBe('"long";q=100;w=60');
          expect(await statuses(running, '/users', 10)).toEqual(times(10, 200));
        },
      ));

    @Controller('users')
    class OverrideShortAndMedium {
      // @Throttle({ short: { limit: 5, ttl: 1000 }, medium: { limit: 30, ttl: 10000 } })
      @Get()
      @RateLimit(
        { name: 'short', limit: 5, window: '1s' },
        { name: 'medium', limit: 30, window: '10s' },
        { name: 'long', limit: 100, window: '1m' },
      )
      findAll() {
        return 'Custom limits for specific throttlers';
      }
    }

    it('@Throttle for two of three names: @RateLimit replaces all, so it lists the third too', () =>
      withApp(
        startApp('express', [RateLimitModule.forRoot({ policies })], [OverrideShortAndMedium]),
        async (running) => {
          const response = await get(running, '/users');
          expect(response.headers.get('ratelimit-policy')).toBe(
            '"short";q=5;w=1, "medium";q=30;w=10, "long";q=100;w=60',
          );
          expect(await statuses(running, '/users', 5)).toEqual([...times(4, 200), 429]);
        },
      ));
  });

  describe('decorators', () => {
    @Controller('users')
    class ThrottledHandler {
      // @Throttle({ default: { limit: 3, ttl: 60000 } })
      @Get()
      @RateLimit({ limit: 3, window: '1m' })
      findAll() {
        return 'List users works with custom rate limiting.';
      }
    }

    it('@Throttle({ default: { limit: 3, ttl: 60000 } }) is @RateLimit({ limit: 3, window: 1m })', () =>
      withApp(
        startApp('express', [RateLimitModule.forRoot({})], [ThrottledHandler]),
        async (running) => {
          expect(await statuses(running, '/users', 4)).toEqual([200, 200, 200, 429]);
        },
      ));

    const POLICY: RateLimitPolicy = { limit: 2, window: '1m' };

    // @SkipThrottle() on the class, @SkipThrottle({ default: false }) on dontSkip.
    @Controller('users')
    @SkipRateLimit()
    class MostlySkipped {
      @Get('dont-skip')
      @RateLimit(POLICY)
      dontSkip() {
        return 'List users work with Rate limiting.';
      }

      @Get('do-skip')
      doSkip() {
        return 'List users work without Rate limiting.';
      }
    }

    it('a class-wide skip is undone on one handler by giving it its own @RateLimit', () =>
      withApp(
        startApp('express', [RateLimitModule.forRoot({ policies: [POLICY] })], [MostlySkipped]),
        async (running) => {
          expect(await statuses(running, '/users/dont-skip', 3)).toEqual([200, 200, 429]);
          expect(await statuses(running, '/users/do-skip', 5)).toEqual(times(5, 200));
          expect((await get(running, '/users/do-skip')).headers.get('ratelimit')).toBeNull();
        },
      ));
  });

  describe('options', () => {
    it('getTracker becomes keyBy: one budget per API key, the IP without one', () =>
      withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [{ limit: 2, window: '1m' }],
              keyBy: (context: ExecutionContext) =>
                header(context, 'x-api-key') ?? clientIp(context),
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          const asKey = async (key: string) =>
            (await get(running, '/users', { 'x-api-key': key })).status;
          expect([await asKey('a'), await asKey('a'), await asKey('a')]).toEqual([200, 200, 429]);
          expect([await asKey('b'), await asKey('b')]).toEqual([200, 200]);
          expect(await statuses(running, '/users', 3)).toEqual([200, 200, 429]);
        },
      ));

    it('skipIf and ignoreUserAgents become skip', () =>
      withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [{ limit: 2, window: '1m' }],
              skip: (context: ExecutionContext) =>
                /googlebot/i.test(
                  context
                    .switchToHttp()
                    .getRequest<{ headers: Record<string, string | undefined> }>().headers[
                    'user-agent'
                  ] ?? '',
                ),
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          const bot = { 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1)' };
          for (let i = 0; i < 5; i++) {
            const response = await get(running, '/users', bot);
            expect(response.status).toBe(200);
            expect(response.headers.get('ratelimit')).toBeNull();
          }
          expect(await statuses(running, '/users', 3)).toEqual([200, 200, 429]);
        },
      ));

    it.each<AdapterKind>(['express', 'fastify'])(
      'behind a proxy (%s): trust proxy alone keys clients by X-Forwarded-For, no getTracker override',
      (adapter) =>
        withApp(
          startApp(
            adapter,
            [RateLimitModule.forRoot({ policies: [{ limit: 2, window: '1m' }] })],
            [UsersController],
            { trustProxy: true },
          ),
          async (running) => {
            const from = async (ip: string) =>
              (await get(running, '/users', { 'x-forwarded-for': ip })).status;
            const first = [await from('203.0.113.7'), await from('203.0.113.7')];
            expect([...first, await from('203.0.113.7')]).toEqual([200, 200, 429]);
            expect([await from('198.51.100.4'), await from('198.51.100.4')]).toEqual([200, 200]);
          },
        ),
    );

    it('a limit that depends on the request becomes a cost: pro clients 10, others 2', () =>
      withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [
                {
                  limit: 10,
                  window: '1h',
                  cost: (context: ExecutionContext) =>
                    header(context, 'x-plan') === 'pro' ? 1 : 5,
                },
              ],
              keyBy: (context: ExecutionContext) => header(context, 'x-api-key') ?? 'anonymous',
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          const as = async (key: string, plan: string, count: number) => {
            const seen: number[] = [];
            for (let i = 0; i < count; i++) {
              seen.push(
                (await get(running, '/users', { 'x-api-key': key, 'x-plan': plan })).status,
              );
            }
            return seen;
          };
          expect(await as('pro-client', 'pro', 11)).toEqual([...times(10, 200), 429]);
          expect(await as('free-client', 'free', 3)).toEqual([200, 200, 429]);
        },
      ));

    it("setHeaders: false is headers: 'none'; a denial still says Retry-After", () =>
      withApp(
        startApp(
          'express',
          [RateLimitModule.forRoot({ policies: [{ limit: 1, window: '1m' }], headers: 'none' })],
          [UsersController],
        ),
        async (running) => {
          const admitted = await get(running, '/users');
          expect([...admitted.headers.keys()].filter((name) => name.includes('ratelimit'))).toEqual(
            [],
          );
          const denied = await get(running, '/users');
          expect(denied.status).toBe(429);
          expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
        },
      ));

    it('a function limit is resolved per request, as throttler does; a function ttl (window) stops the start', async () => {
      await withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [
                {
                  limit: (context: ExecutionContext) =>
                    header(context, 'x-plan') === 'pro' ? 3 : 1,
                  window: '1h',
                },
              ],
              keyBy: (context: ExecutionContext) => header(context, 'x-api-key') ?? 'anonymous',
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          const as = async (key: string, plan: string) => {
            const seen: number[] = [];
            for (let i = 0; i < 4; i++) {
              seen.push(
                (await get(running, '/users', { 'x-api-key': key, 'x-plan': plan })).status,
              );
            }
            return seen;
          };
          expect(await as('pro-client', 'pro')).toEqual([200, 200, 200, 429]);
          expect(await as('free-client', 'free')).toEqual([200, 429, 429, 429]);
        },
      );
      const resolvableTtl = { limit: 5, window: (() => 60_000) as unknown as number };
      await expect(
        startApp(
          'express',
          [RateLimitModule.forRoot({ policies: [resolvableTtl] })],
          [UsersController],
        ),
      ).rejects.toThrow(RateLimitConfigError);
    });

    @Injectable()
    class ThrottleConfig {
      readonly limit = 2;
      readonly ttl = 60_000;
    }

    @Module({ providers: [ThrottleConfig], exports: [ThrottleConfig] })
    class ThrottleConfigModule {}

    @Injectable()
    class RateLimitConfigService implements RateLimitOptionsFactory {
      createRateLimitOptions(): RateLimitModuleOptions {
        return { policies: [{ limit: 2, window: 60_000 }] };
      }
    }

    it.each([
      [
        'useFactory',
        RateLimitModule.forRootAsync({
          imports: [ThrottleConfigModule],
          inject: [ThrottleConfig],
          useFactory: (config: ThrottleConfig) => ({
            policies: [{ limit: config.limit, window: config.ttl }],
          }),
        }),
      ],
      ['useClass', RateLimitModule.forRootAsync({ useClass: RateLimitConfigService })],
    ])('forRootAsync with %s, as ThrottlerModule.forRootAsync', (_, module) =>
      withApp(startApp('express', [module], [UsersController]), async (running) => {
        expect(await statuses(running, '/users', 3)).toEqual([200, 200, 429]);
      }),
    );
  });

  describe('errorMessage', () => {
    @Injectable()
    class FriendlyRateLimitGuard extends RateLimitGuard {
      protected override deny(context: ExecutionContext, decision: RateLimitDecision): never {
        try {
          super.deny(context, decision);
        } catch (error) {
          if (!(error instanceof RateLimitExceededException)) throw error;
          throw new RateLimitExceededException('Slow down, please.', error.retryAfter);
        }
      }
    }

    @Module({
      imports: [RateLimitModule.forRoot({ guard: false, policies: [{ limit: 1, window: '1m' }] })],
      controllers: [UsersController],
      providers: [{ provide: APP_GUARD, useClass: FriendlyRateLimitGuard }],
    })
    class AppModule {}

    it('becomes a guard subclass overriding deny, registered as APP_GUARD with guard: false', () =>
      withApp(startApp('express', [AppModule], []), async (running) => {
        expect((await get(running, '/users')).status).toBe(200);
        const denied = await get(running, '/users');
        expect(denied.status).toBe(429);
        expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
        expect(denied.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
        expect(await denied.json()).toMatchObject({
          statusCode: 429,
          message: 'Slow down, please.',
        });
        // Every later one too: the guard renders no 429 itself for a subclass's own deny.
        for (let i = 0; i < 2; i++) {
          expect(await (await get(running, '/users')).json()).toMatchObject({
            message: 'Slow down, please.',
          });
        }
      }));
  });

  describe('what a denied request costs', () => {
    it('nothing: no block; the client is back the moment its window allows, however often it was denied', async () => {
      let now = T0;
      await withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [{ limit: 3, window: '1s', algorithm: 'sliding-window-log' }],
              clock: () => now,
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          expect(await statuses(running, '/users', 3)).toEqual(times(3, 200));
          now = T0 + 900;
          expect(await statuses(running, '/users', 20)).toEqual(times(20, 429));
          now = T0 + 999;
          expect((await get(running, '/users')).status).toBe(429);
          // Throttler would keep this client blocked until T0 + 900 + blockDuration (the ttl).
          now = T0 + 1_000;
          expect(await statuses(running, '/users', 3)).toEqual(times(3, 200));
        },
      );
    });
  });

  describe('responses', () => {
    it("headers: 'legacy' sends throttler's X-RateLimit-* names, for the tightest policy, without name suffixes", () =>
      withApp(
        startApp(
          'express',
          [
            RateLimitModule.forRoot({
              policies: [
                { name: 'short', limit: 2, window: '1s', algorithm: 'sliding-window-log' },
                { name: 'long', limit: 100, window: '1m', algorithm: 'sliding-window-log' },
              ],
              headers: 'legacy',
            }),
          ],
          [UsersController],
        ),
        async (running) => {
          const first = await get(running, '/users');
          expect(first.headers.get('x-ratelimit-limit')).toBe('2');
          expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
          expect(first.headers.get('x-ratelimit-reset')).toBe('1');
          expect(first.headers.get('x-ratelimit-remaining-short')).toBeNull();
          expect(first.headers.get('ratelimit')).toBeNull();
          await get(running, '/users');
          const denied = await get(running, '/users');
          expect(denied.status).toBe(429);
          expect(denied.headers.get('x-ratelimit-remaining')).toBe('0');
          expect(denied.headers.get('retry-after')).toBe('1');
          expect(denied.headers.get('retry-after-short')).toBeNull();
          expect(await denied.json()).toEqual({
            statusCode: 429,
            error: 'Too Many Requests',
            message: 'Rate limit exceeded ("short"); retry in 1 s.',
            retryAfter: 1,
          });
        },
      ));
  });

  describe('storage: Redis instead of a per-process store', () => {
    const redis = useRedisServer();

    it('two instances of the app on one Redis share one budget per client', async () => {
      const module = () =>
        RateLimitModule.forRoot({
          redis: redis.server.url,
          policies: [{ limit: 10, window: '1m', scope: 'route' }],
        });
      const [a, b] = await Promise.all([
        startApp('express', [module()], [UsersController]),
        startApp('fastify', [module()], [UsersController]),
      ]);
      try {
        const seen: number[] = [];
        for (let i = 0; i < 12; i++) seen.push((await get(i % 2 ? b : a, '/users')).status);
        expect(seen).toEqual([...times(10, 200), 429, 429]);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });
});
