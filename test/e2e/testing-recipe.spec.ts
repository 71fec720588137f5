import {
  Controller,
  Global,
  HttpCode,
  type INestApplication,
  Injectable,
  Module,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RATE_LIMIT_CLOCK,
  RATE_LIMIT_OPTIONS,
  RateLimitConfigError,
  RateLimitGuard,
  RateLimitModule,
  type ResolvedRateLimitOptions,
} from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The recipe of docs/testing.md, as written there: the app's module as it ships, its clock
 * overridden through RATE_LIMIT_CLOCK, time moved by the 429's Retry-After.
 */

@Controller()
class LoginController {
  @Post('login')
  @HttpCode(201)
  login() {
    return 'welcome';
  }
}

/** What `@nestjs/config` gives an app: settings read from the environment, injectable. */
@Injectable()
class ConfigService {
  get<T>(key: string, fallback?: T): T | string | undefined {
    return process.env[key] ?? fallback;
  }
}

@Global()
@Module({ providers: [ConfigService], exports: [ConfigService] })
class ConfigModule {}

/** The forRootAsync app: its limit and Redis come from its config. */
@Module({
  imports: [
    ConfigModule,
    RateLimitModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        redis: config.get('REDIS_URL') || undefined,
        policies: [{ limit: Number(config.get('LOGIN_LIMIT', 5)), window: '1m' }],
      }),
    }),
  ],
  controllers: [LoginController],
})
class AsyncAppModule {}

/** The forRoot app, defined where the environment is read: once the test's Redis runs. */
function forRootAppModule(): Type {
  @Module({
    imports: [
      RateLimitModule.forRoot({
        redis: process.env.REDIS_URL,
        prefix: 'sync-app',
        policies: [{ limit: 5, window: '1m' }],
      }),
    ],
    controllers: [LoginController],
  })
  class AppModule {}
  return AppModule;
}

const redis = useRedisServer();

beforeAll(() => {
  process.env.REDIS_URL = redis.server.url;
  process.env.LOGIN_LIMIT = '3';
});
afterAll(() => {
  delete process.env.REDIS_URL;
  delete process.env.LOGIN_LIMIT;
});

describe.each([
  ['forRoot', forRootAppModule, 5],
  ['forRootAsync with a config factory', () => AsyncAppModule, 3],
])('the testing recipe on a %s app', (_, appModule, limit) => {
  let now = Date.now();
  let app: INestApplication;
  let url: string;
  const clock = () => now;

  beforeAll(async () => {
    const AppModule = appModule();
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(clock)
      .compile();
    app = moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(() => app.close());

  it('admits the configured logins, then admits again once Retry-After has passed', async () => {
    const login = () => fetch(`${url}/login`, { method: 'POST' });
    for (let i = 0; i < limit; i++) expect((await login()).status).toBe(201);
    const denied = await login();
    expect(denied.status).toBe(429);
    now += Number(denied.headers.get('retry-after')) * 1_000;
    expect((await login()).status).toBe(201);
  });

  it('decides on the virtual clock everywhere `clock: fn` would: the options carry it', () => {
    expect(app.get<ResolvedRateLimitOptions>(RATE_LIMIT_OPTIONS).clock).toBe(clock);
  });

  it('keeps the limit: without moving time, the client stays denied', async () => {
    const login = () => fetch(`${url}/login`, { method: 'POST' });
    let status = 201;
    for (let i = 0; i <= limit && status === 201; i++) status = (await login()).status;
    expect(status).toBe(429);
    expect((await login()).status).toBe(429);
  });
});

describe('RATE_LIMIT_CLOCK', () => {
  it("is the clock option, 'redis' by default", async () => {
    for (const [options, clock] of [
      [{}, 'redis'],
      [{ clock: 'local' as const }, 'local'],
    ] as const) {
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot(options)],
      }).compile();
      expect(moduleRef.get(RATE_LIMIT_CLOCK)).toBe(clock);
      expect(moduleRef.get<ResolvedRateLimitOptions>(RATE_LIMIT_OPTIONS).clock).toBe(clock);
      await moduleRef.close();
    }
  });

  it('fails the start with a RateLimitConfigError naming clock when overridden with nonsense', async () => {
    const compiling = Test.createTestingModule({ imports: [RateLimitModule.forRoot({})] })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue('ntp')
      .compile();
    await expect(compiling).rejects.toThrow(RateLimitConfigError);
    await expect(compiling).rejects.toThrow(/option clock/);
  });
});

/** A route of the app's that applies the guard itself, beside the global guard's. */
@Controller()
class GuardedController {
  @Post('guarded')
  @HttpCode(201)
  @UseGuards(RateLimitGuard)
  guarded() {
    return 'ok';
  }
}

describe('limiting off, as docs/testing.md says', () => {
  it('lets every request through, on routes of the global guard and of @UseGuards(RateLimitGuard)', async () => {
    @Module({
      imports: [RateLimitModule.forRoot({ policies: [{ limit: 1, window: '1h' }] })],
      controllers: [LoginController, GuardedController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RateLimitGuard)
      .useValue({ canActivate: () => true })
      .compile();
    const app = moduleRef.createNestApplication();
    try {
      await app.listen(0, '127.0.0.1');
      const url = await app.getUrl();
      for (const path of ['/login', '/guarded']) {
        const statuses = [];
        for (let i = 0; i < 3; i++)
          statuses.push((await fetch(url + path, { method: 'POST' })).status);
        expect([path, ...statuses]).toEqual([path, 201, 201, 201]);
      }
    } finally {
      await app.close();
    }
  });
});
