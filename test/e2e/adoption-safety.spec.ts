import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { Redis } from 'ioredis';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import {
  type AdapterKind,
  RecordingLogger,
  type RunningApp,
  sequentially,
  startApp,
  withApp,
} from '../support/test-app.js';

/** Sets `req.user` from `Authorization: Bearer <id>`, as a Passport-style guard does. */
@Injectable()
class AuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{
      headers: Record<string, string | undefined>;
      user?: { id: string };
    }>();
    const id = request.headers.authorization?.replace(/^Bearer /, '');
    if (id) request.user = { id };
    return true;
  }
}

/** The usual per-user keyBy: it needs the auth guard to have run. */
const byUser = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id as string;

const USERS = ['alice', 'bob', 'carol', 'dave'];
const LIMIT = 2;

@Controller()
class GlobalAuthController {
  @Get('me')
  @RateLimit({ limit: LIMIT, window: '1h', keyBy: byUser })
  me() {
    return 'ok';
  }
}

/** The pitfall: the auth guard on the route runs after the global RateLimitGuard. */
@Controller()
@UseGuards(AuthGuard)
class RouteAuthController {
  @Get('me')
  @RateLimit({ limit: LIMIT, window: '1h', keyBy: byUser })
  me() {
    return 'ok';
  }
}

/** The recipe without a global auth guard: both on the route, in order, and `guard: false`. */
@Controller()
@UseGuards(AuthGuard, RateLimitGuard)
class OrderedGuardsController {
  @Get('me')
  @RateLimit({ limit: LIMIT, window: '1h', keyBy: byUser })
  me() {
    return 'ok';
  }
}

@Module({ providers: [{ provide: APP_GUARD, useClass: AuthGuard }] })
class GlobalAuthModule {}

describe.each<AdapterKind>(['express', 'fastify'])('Adoption safety on %s', (adapter) => {
  let server: RedisServer;
  let client: Redis;
  let prefix = 0;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  const boot = (
    imports: Parameters<typeof startApp>[1],
    controllers: Parameters<typeof startApp>[2],
    logger = new RecordingLogger(),
  ) => startApp(adapter, imports, controllers, { logger });
  const module = (options: RateLimitModuleOptions = {}) =>
    RateLimitModule.forRoot({ redis: server.url, prefix: `p${++prefix}`, ...options });
  const asUser = (running: RunningApp, user?: string) =>
    fetch(running.url + '/me', {
      headers: user === undefined ? {} : { authorization: `Bearer ${user}` },
    });
  /** The clients (hash tags) of the keys this test's app wrote. */
  const clients = async () =>
    [
      ...new Set((await client.keys(`p${prefix}:*`)).map((key) => /\{(.*?)\}/.exec(key)![1])),
    ].sort();
  const budgets = async (running: RunningApp) => {
    const statuses: Record<string, number[]> = {};
    for (const user of USERS) {
      statuses[user] = await sequentially(LIMIT + 1, () => asUser(running, user));
    }
    return statuses;
  };
  const ownBudget = [200, 200, 429];

  it('a global auth guard registered before the module: four users, four budgets', async () => {
    const logger = new RecordingLogger();
    await withApp(
      boot([GlobalAuthModule, module()], [GlobalAuthController], logger),
      async (running) => {
        expect(await budgets(running)).toEqual(
          Object.fromEntries(USERS.map((user) => [user, ownBudget])),
        );
        expect(await clients()).toEqual([...USERS].sort());
        expect(logger.warnings.filter((line) => line.includes('keyBy'))).toEqual([]);
      },
    );
  });

  it.each([true, false])(
    '@UseGuards(AuthGuard, RateLimitGuard), the global guard %p: four users, four budgets',
    async (guard) => {
      await withApp(boot([module({ guard })], [OrderedGuardsController]), async (running) => {
        expect(await budgets(running)).toEqual(
          Object.fromEntries(USERS.map((user) => [user, ownBudget])),
        );
        expect(await clients()).toEqual([...USERS].sort());
      });
    },
  );

  it('a keyBy that finds no user keys by the client address, and says why once', async () => {
    const logger = new RecordingLogger();
    await withApp(boot([module()], [RouteAuthController], logger), async (running) => {
      // Every user comes from 127.0.0.1: one budget between them, the address's, never "undefined".
      const statuses = await sequentially(4, () => asUser(running, USERS[0]));
      expect(statuses).toEqual([200, 200, 429, 429]);
      expect(await asUser(running)).toHaveProperty('status', 429);
      expect(await clients()).toEqual(['127.0.0.1']);
      const warnings = logger.warnings.filter((line) => line.includes('keyBy'));
      expect(warnings).toEqual([
        expect.stringMatching(
          /^keyBy gave undefined for policy "default" on RouteAuthController\.me: limited by the client address instead\. .*guard/,
        ),
      ]);
    });
  });

  it('a module keyBy giving null or an empty string falls back the same way', async () => {
    for (const absent of [null, '']) {
      const logger = new RecordingLogger();
      const options = {
        keyBy: () => absent as unknown as string,
        policies: [{ limit: 1, window: '1h' }],
      };
      @Controller()
      class OpenController {
        @Get('me')
        me() {
          return 'ok';
        }
      }
      await withApp(boot([module(options)], [OpenController], logger), async (running) => {
        expect(await sequentially(2, () => asUser(running))).toEqual([200, 429]);
        expect(await clients()).toEqual(['127.0.0.1']);
      });
      expect(logger.warnings.filter((line) => line.includes('keyBy'))).toEqual([
        expect.stringContaining(
          `keyBy gave ${JSON.stringify(absent)} for policy "default" on OpenController.me`,
        ),
      ]);
    }
  });
});

@Controller()
class AccountController {
  @Get('login')
  @RateLimit({ limit: LIMIT, window: '1h', failureMode: 'closed' })
  login() {
    return 'ok';
  }

  @Get('read')
  @RateLimit({ limit: LIMIT, window: '1h' })
  read() {
    return 'ok';
  }
}

describe.each<AdapterKind>(['express', 'fastify'])('During an outage on %s', (adapter) => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(() => server.stop());

  it("a closed route's 503 names no host, port or store error; the log names them and the modes in force", async () => {
    const logger = new RecordingLogger();
    const options = { redis: server.url, timeout: 100 };
    await withApp(
      startApp(adapter, [RateLimitModule.forRoot(options)], [AccountController], { logger }),
      async (running) => {
        expect((await running.get('/login')).status).toBe(200);
        await server.kill();
        const response = await running.get('/login');
        expect(response.status).toBe(503);
        const body = await response.text();
        const headers = JSON.stringify([...response.headers]);
        for (const internal of [
          '127.0.0.1',
          String(server.port),
          'ECONN',
          'refused',
          'lost',
          'Redis',
        ]) {
          expect(body).not.toContain(internal);
          expect(headers).not.toContain(internal);
        }
        expect(JSON.parse(body)).toEqual({
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'Rate limiting is unavailable, please retry later.',
          retryAfter: Number(response.headers.get('retry-after')),
        });
        expect((await running.get('/read')).status).toBe(200);
        const outage = logger.warnings.filter((line) => line.includes('store unavailable'));
        expect(outage).toEqual([
          expect.stringMatching(
            /^Rate limit store unavailable: connection (lost|refused).*; until it answers, failureMode 'open' \('closed' on AccountController\.login\) applies$/,
          ),
        ]);
      },
    );
    await server.restart();
  });
});

@Controller()
class TrialController {
  /** Only a shadow policy, closed: it never holds a request back. */
  @Get('trial')
  @RateLimit({ limit: LIMIT, window: '1h', shadow: true, failureMode: 'closed' })
  trial() {
    return 'ok';
  }
}

describe('What a store failure holds back, and what guard: false leaves unlimited', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(() => server.stop());

  it('a closed route fails open under dryRun, as does one whose only policy is a shadow', async () => {
    const logger = new RecordingLogger();
    const boot = (options: RateLimitModuleOptions) =>
      startApp(
        'express',
        [RateLimitModule.forRoot({ redis: server.url, timeout: 100, ...options })],
        [AccountController, TrialController],
        { logger },
      );
    await server.kill();
    try {
      await withApp(boot({ dryRun: true, failureMode: 'closed' }), async (running) => {
        for (const path of ['/login', '/read', '/trial']) {
          expect((await running.get(path)).status).toBe(200);
        }
      });
      await withApp(boot({}), async (running) => {
        expect((await running.get('/trial')).status).toBe(200);
        expect((await running.get('/login')).status).toBe(503);
      });
    } finally {
      await server.restart();
    }
    // The trial route is not named as closed: only the login route is.
    expect(logger.warnings.filter((line) => line.includes("'closed' on"))).toEqual([
      expect.stringContaining("('closed' on AccountController.login) applies"),
    ]);
  });

  it('guard: false names the routes with policies that no @UseGuards(RateLimitGuard) limits', async () => {
    const logger = new RecordingLogger();
    await withApp(
      startApp(
        'express',
        [RateLimitModule.forRoot({ redis: server.url, guard: false })],
        [AccountController, OrderedGuardsController],
        { logger },
      ),
      async (running) => {
        expect((await running.get('/login')).status).toBe(200);
      },
    );
    expect(logger.warnings.filter((line) => line.startsWith('guard: false'))).toEqual([
      'guard: false, and 2 routes have policies but no @UseGuards(RateLimitGuard): AccountController.login, AccountController.read. They are not limited unless a guard of your own applies RateLimitGuard to them.',
    ]);
  });
});
