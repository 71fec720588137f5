import { Controller, Get } from '@nestjs/common';
import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { byClientHeader, startApp, withApp } from '../support/test-app.js';

const TIMEOUT_MS = 100;
const LIMIT = 4;

@Controller()
class AccountController {
  /** Fails closed: a login must not go unlimited while Redis is down. */
  @Get('login')
  @RateLimit({ limit: LIMIT, window: '1h', failureMode: 'closed' })
  login() {
    return 'ok';
  }

  /** The module's mode (open). */
  @Get('read')
  @RateLimit({ limit: LIMIT, window: '1h' })
  read() {
    return 'ok';
  }

  /** Decided in this process at limit / instances while Redis is down. */
  @Get('search')
  @RateLimit({ limit: LIMIT, window: '1h', failureMode: 'local' })
  search() {
    return 'ok';
  }

  /** Open and closed policies on one route: the strictest, closed, applies. */
  @Get('export')
  @RateLimit(
    { name: 'burst', limit: LIMIT, window: '1m' },
    { name: 'daily', limit: LIMIT, window: '1d', failureMode: 'closed' },
  )
  export() {
    return 'ok';
  }
}

/** A policy's failureMode overrides the module's on its routes; the strictest of a route's wins. */
describe('failureMode per policy, over HTTP with Redis killed', () => {
  let server: RedisServer;
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(() => server.stop());

  const boot = (options: RateLimitModuleOptions = {}) =>
    startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: server.url,
          keyBy: byClientHeader,
          timeout: TIMEOUT_MS,
          breaker: false,
          instances: 2,
          ...options,
        }),
      ],
      [AccountController],
    );

  it('closes the login route while reads stay open, and a local route decides at its share', async () => {
    await withApp(boot(), async (running) => {
      for (const path of ['/login', '/read', '/search', '/export']) {
        expect((await running.get(path, 'up')).status).toBe(200);
      }
      await server.kill();

      const login = await running.get('/login', 'down');
      expect(login.status).toBe(503);
      expect(Number(login.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await running.get('/export', 'down')).status).toBe(503);

      const reads: number[] = [];
      for (let i = 0; i < LIMIT + 2; i++) reads.push((await running.get('/read', 'down')).status);
      expect(reads).toEqual(Array(LIMIT + 2).fill(200));

      // limit / instances = 2 locally, then 429 from this process's own share.
      const searches: number[] = [];
      for (let i = 0; i < 3; i++) searches.push((await running.get('/search', 'down')).status);
      expect(searches).toEqual([200, 200, 429]);
    });
  });

  it('lets an open policy relax a closed module on its own route only', async () => {
    @Controller()
    class MixedController {
      @Get('public')
      @RateLimit({ limit: LIMIT, window: '1h', failureMode: 'open' })
      public() {
        return 'ok';
      }

      @Get('private')
      @RateLimit({ limit: LIMIT, window: '1h' })
      private() {
        return 'ok';
      }
    }
    const app = startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: server.url,
          keyBy: byClientHeader,
          timeout: TIMEOUT_MS,
          failureMode: 'closed',
        }),
      ],
      [MixedController],
    );
    await withApp(app, async (running) => {
      await server.kill();
      expect((await running.get('/public', 'down')).status).toBe(200);
      expect((await running.get('/private', 'down')).status).toBe(503);
    });
  });

  it("refuses at start a policy's 'local' without the module's instances", async () => {
    @Controller()
    class LocalController {
      @Get('local')
      @RateLimit({ limit: LIMIT, window: '1h', failureMode: 'local' })
      local() {
        return 'ok';
      }
    }
    await expect(
      // The embedded store: a start that fails leaves no client of the module's behind.
      startApp('express', [RateLimitModule.forRoot({})], [LocalController]),
    ).rejects.toThrow(
      'Invalid rate limit policy "default" on LocalController.local: failureMode \'local\' needs the module option instances',
    );
  });
});
