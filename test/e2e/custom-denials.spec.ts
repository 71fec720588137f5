import { Controller, Get } from '@nestjs/common';
import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { withRedisDown } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  RecordingLogger,
  startApp,
} from '../support/test-app.js';
import type { RateLimitResponseOption } from '../../lib/interfaces/rate-limit-response.interface.js';

@Controller()
class DeniedController {
  @Get('once')
  @RateLimit({ name: 'once', algorithm: 'fixed-window', limit: 1, window: '1m' })
  once() {
    return 'ok';
  }
}

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])(
  'custom denials over HTTP with %s',
  (adapter) => {
    let client = 0;
    const nextClient = () => `denial-${++client}-${Date.now()}`;
    const boot = (options: RateLimitModuleOptions, logger?: RecordingLogger) =>
      startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: redis.server.url,
            prefix: `denial-${adapter}`,
            keyBy: byClientHeader,
            ...options,
          }),
        ],
        [DeniedController],
        { logger },
      );
    /** The second request of a fresh client: denied. */
    const denied = async (options: RateLimitModuleOptions, logger?: RecordingLogger) => {
      const running = await boot(options, logger);
      try {
        // Both requests in one fixed window of 'once' on Redis's clock.
        await untilWindowHasRoom(redis.server, 60_000);
        const who = nextClient();
        await running.get('/once', who);
        const response = await running.get('/once', who);
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          rateLimit: response.headers.get('ratelimit'),
          body: (await response.json()) as unknown,
        };
      } finally {
        await running.close();
      }
    };

    it('limitedResponse as a message replaces the message only', async () => {
      expect(await denied({ limitedResponse: 'Slow down, please.' })).toEqual({
        status: 429,
        retryAfter: expect.stringMatching(/^\d+$/),
        rateLimit: expect.stringMatching(/^"once";r=0;t=\d+$/),
        body: {
          statusCode: 429,
          error: 'Too Many Requests',
          message: 'Slow down, please.',
          retryAfter: expect.any(Number),
        },
      });
    });

    it('limitedResponse as a function sends its body, keeping status, Retry-After and RateLimit', async () => {
      const limitedResponse: RateLimitResponseOption = (context, denial) => ({
        code: 'SLOW_DOWN',
        path: context.switchToHttp().getRequest<{ url: string }>().url,
        policies: denial.decision!.results.filter((r) => !r.allowed).map((r) => r.policy),
        retryInSeconds: denial.retryAfter,
        status: denial.status,
      });
      const seen = await denied({ limitedResponse });
      expect(seen).toEqual({
        status: 429,
        retryAfter: expect.stringMatching(/^\d+$/),
        rateLimit: expect.stringMatching(/^"once";r=0;t=\d+$/),
        body: {
          code: 'SLOW_DOWN',
          path: '/once',
          policies: ['once'],
          retryInSeconds: Number(seen.retryAfter),
          status: 429,
        },
      });
    });

    it('a throwing body function is logged and the default body sent', async () => {
      const logger = new RecordingLogger();
      const seen = await denied(
        {
          limitedResponse: () => {
            throw new Error('template missing');
          },
        },
        logger,
      );
      expect(seen.status).toBe(429);
      expect(seen.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
      expect(logger.warnings).toEqual([
        'limitedResponse failed (template missing); sent the default body',
      ]);
    });

    it('unavailableResponse shapes the 503 of failureMode closed, keeping Retry-After', async () => {
      await withRedisDown(
        (options) =>
          boot({
            ...options,
            unavailableResponse: (_context, denial) => ({
              code: 'LIMITER_DOWN',
              retryInSeconds: denial.retryAfter,
              status: denial.status,
            }),
          }),
        async (open, closed) => {
          expect((await open.get('/once', nextClient())).status).toBe(200);
          const response = await closed.get('/once', nextClient());
          expect(response.status).toBe(503);
          const retryAfter = Number(response.headers.get('retry-after'));
          expect(retryAfter).toBeGreaterThanOrEqual(1);
          expect(await response.json()).toEqual({
            code: 'LIMITER_DOWN',
            retryInSeconds: retryAfter,
            status: 503,
          });
        },
      );
    });
  },
);
