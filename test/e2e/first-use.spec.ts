import { Controller, Get, type LoggerService } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { type RedisServer, startRedisServer, untilWindowHasRoom } from '../support/redis-server.js';
import { byClientHeader, sequentially, startApp, withApp } from '../support/test-app.js';

@Controller()
class FirstUseController {
  @Get('a')
  @RateLimit({ limit: 2, window: '1m' })
  a() {
    return 'ok';
  }

  @Get('b')
  @RateLimit({ limit: 2, window: '1m' })
  b() {
    return 'ok';
  }
}

/** Everything the app logs, at every level, as `context: message`. */
class AllLevelsLogger implements LoggerService {
  readonly lines: string[] = [];
  private record(message: unknown, rest: unknown[]): void {
    const context = rest.length > 0 ? String(rest[rest.length - 1]) : '';
    this.lines.push(`${context}: ${String(message)}`);
  }
  log(message: unknown, ...rest: unknown[]): void {
    this.record(message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.record(message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.record(message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.record(message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.record(message, rest);
  }
}

function start(options: RateLimitModuleOptions, logger = new AllLevelsLogger()) {
  return startApp(
    'express',
    [RateLimitModule.forRoot({ keyBy: byClientHeader, ...options })],
    [FirstUseController],
    // The module logs while it compiles, before the app's own logger is set.
    { logger, customize: (builder) => builder.setLogger(logger) },
  );
}

const decidingOn = (logger: AllLevelsLogger) =>
  logger.lines.filter((line) => line.includes('Deciding on'));

describe('first use', () => {
  describe("redis: '' (an empty REDIS_URL)", () => {
    it.each([
      ['an empty string', ''],
      ['a blank string', '   '],
    ])(
      'fails the start with a RateLimitConfigError naming the option, for %s, without trying to connect',
      async (_, redis) => {
        const logger = new AllLevelsLogger();
        const started = performance.now();
        const starting = start({ redis }, logger);
        await expect(starting).rejects.toThrow(RateLimitConfigError);
        await expect(starting).rejects.toThrow(/option redis: is an empty string/);
        // A client would log where it decides, or wait up to 2 s and warn it is unreachable.
        expect(performance.now() - started).toBeLessThan(1_500);
        expect(logger.lines.filter((line) => /Redis/.test(line))).toEqual([]);
      },
    );

    it('fails the same way through forRootAsync with REDIS_URL set but empty', async () => {
      const env = { REDIS_URL: '' };
      const starting = startApp(
        'express',
        [
          RateLimitModule.forRootAsync({
            useFactory: (): RateLimitModuleOptions => ({ redis: env.REDIS_URL }),
          }),
        ],
        [FirstUseController],
      );
      await expect(starting).rejects.toThrow(RateLimitConfigError);
      await expect(starting).rejects.toThrow(/option redis: is an empty string/);
    });
  });

  describe('the start-up log of the Redis it decides on', () => {
    const PASSWORD = 'first-use-secret';
    let server: RedisServer;

    beforeAll(async () => {
      server = await startRedisServer({ password: PASSWORD });
    });
    afterAll(() => server.stop());

    it.each([
      ['a password', (port: number) => `redis://:${PASSWORD}@127.0.0.1:${port}`],
      ['a user and password', (port: number) => `redis://default:${PASSWORD}@127.0.0.1:${port}`],
    ])(
      'says host and port exactly once, and never the credentials, for a URL with %s',
      async (_, url) => {
        const logger = new AllLevelsLogger();
        await withApp(start({ redis: url(server.port) }, logger), async (running) => {
          // Connected: Redis decides, so the third request is denied.
          const who = `log-${url(0).length}`;
          expect(await sequentially(3, () => running.get('/a', who))).toEqual([200, 200, 429]);
        });
        expect(decidingOn(logger)).toEqual([
          `RateLimit: Deciding on Redis at 127.0.0.1:${server.port}`,
        ]);
        expect(logger.lines.filter((line) => /not reachable/.test(line))).toEqual([]);
        expect(logger.lines.filter((line) => line.includes(PASSWORD))).toEqual([]);
        expect(logger.lines.filter((line) => line.includes('default:'))).toEqual([]);
      },
    );

    it('logs nothing about Redis on the embedded store', async () => {
      const logger = new AllLevelsLogger();
      await withApp(start({}, logger), async () => undefined);
      expect(decidingOn(logger)).toEqual([]);
    });
  });

  describe('defaults: { algorithm, scope }', () => {
    let server: RedisServer;
    let client: Redis;

    beforeAll(async () => {
      server = await startRedisServer();
      client = new Redis(server.url);
    });
    beforeEach(() => client.flushall());
    afterAll(async () => {
      client.disconnect();
      await server.stop();
    });

    it("gives policies naming neither the fixed window and scope 'global': two routes share one budget", async () => {
      await withApp(
        start({ redis: server.url, defaults: { algorithm: 'fixed-window', scope: 'global' } }),
        async (running) => {
          // A fixed window starts its count over when it ends: begin well inside one.
          await untilWindowHasRoom(client, 60_000);
          const statuses = [
            (await running.get('/a', 'shared')).status,
            (await running.get('/b', 'shared')).status,
            (await running.get('/a', 'shared')).status,
            (await running.get('/b', 'shared')).status,
          ];
          expect(statuses).toEqual([200, 200, 429, 429]);
        },
      );
      const keys = await client.keys('*');
      // One budget: one key, of the fixed window ('fw3'), with no route in it.
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/:default:fw3(?![:\w])/);
      expect(keys[0]).toContain('shared');
    });

    it('without defaults, each route has its own budget on the sliding window counter', async () => {
      await withApp(start({ redis: server.url }), async (running) => {
        expect(await sequentially(2, () => running.get('/a', 'apart'))).toEqual([200, 200]);
        expect(await sequentially(3, () => running.get('/b', 'apart'))).toEqual([200, 200, 429]);
        expect((await running.get('/a', 'apart')).status).toBe(429);
      });
      const keys = await client.keys('*');
      expect(keys.some((key) => key.includes(':fw3'))).toBe(false);
      expect(keys.some((key) => key.includes(':default:swc2:'))).toBe(true);
    });
  });
});
