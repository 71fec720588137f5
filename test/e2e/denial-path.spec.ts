import v8 from 'node:v8';
import { jest } from '@jest/globals';
import vm from 'node:vm';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  HttpStatus,
  UseFilters,
} from '@nestjs/common';
import {
  RateLimit,
  RateLimitExceededException,
  RateLimitExceptionFilter,
  RateLimitModule,
} from '../../lib/index.js';
import { VirtualClock } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import { type AdapterKind, byClientHeader, startApp, withApp } from '../support/test-app.js';

@Controller('one')
class OneController {
  @Get()
  @RateLimit({ algorithm: 'fixed-window', limit: 1, window: '1m' })
  one() {
    return 'ok';
  }
}

/** Renders every 429 its own way, and counts them. */
@Catch(RateLimitExceededException)
class CountingFilter implements ExceptionFilter {
  static seen = 0;
  catch(exception: RateLimitExceededException, host: ArgumentsHost): void {
    CountingFilter.seen++;
    const response = host.getArgByIndex<{
      status?(code: number): unknown;
      code?(code: number): unknown;
    }>(1);
    const reply = (response.code ?? response.status)!.call(response, 429) as {
      send(body: unknown): void;
    };
    reply.send({ ownFilter: true, retryAfter: exception.retryAfter });
  }
}

/** Catches everything, as app-wide "all exceptions" filters do. */
@Catch()
class CatchAllFilter extends CountingFilter {}

@Controller('filtered')
@UseFilters(CountingFilter)
class FilteredController {
  @Get()
  @RateLimit({ algorithm: 'fixed-window', limit: 1, window: '1m' })
  filtered() {
    return 'ok';
  }
}

const gc = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])('429s over HTTP with %s', (adapter) => {
  let client = 0;
  const nextClient = () => `denial-${adapter}-${++client}-${Date.now()}`;
  const seen = async (response: Response) => ({
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    policy: response.headers.get('ratelimit-policy'),
    rateLimit: response.headers.get('ratelimit'),
    contentType: response.headers.get('content-type'),
    body: (await response.json()) as unknown,
  });
  beforeEach(() => {
    CountingFilter.seen = 0;
  });

  it("answers every 429 of a route through Nest's exception path: the module's filter renders each, the same response", async () => {
    // At the start of a minute, so the fixed window has all of it left.
    const clock = new VirtualClock(1_700_000_040_000);
    const rendered = jest.spyOn(RateLimitExceptionFilter.prototype, 'catch');
    try {
      await withApp(
        startApp(
          adapter,
          [
            RateLimitModule.forRoot({
              redis: redis.server.url,
              prefix: `direct-${adapter}`,
              keyBy: byClientHeader,
              clock: clock.read,
            }),
          ],
          [OneController],
        ),
        async (running) => {
          const who = nextClient();
          expect((await running.get('/one', who)).status).toBe(200);
          const first = await seen(await running.get('/one', who));
          const later = [];
          for (let i = 0; i < 3; i++) later.push(await seen(await running.get('/one', who)));
          expect(first).toEqual({
            status: 429,
            retryAfter: '60',
            policy: '"default";q=1;w=60',
            rateLimit: '"default";r=0;t=60',
            contentType: expect.stringMatching(/^application\/json/),
            body: {
              statusCode: 429,
              error: 'Too Many Requests',
              message: 'Rate limit exceeded ("default"); retry in 60 s.',
              retryAfter: 60,
            },
          });
          expect(later).toEqual([first, first, first]);
          expect(rendered).toHaveBeenCalledTimes(4);
        },
      );
    } finally {
      rendered.mockRestore();
    }
  });

  it('counts Retry-After, the RateLimit headers and the message down in its 429s', async () => {
    const clock = new VirtualClock(1_700_000_040_000);
    await withApp(
      startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: redis.server.url,
            prefix: `countdown-${adapter}`,
            keyBy: byClientHeader,
            clock: clock.read,
            headers: 'both',
          }),
        ],
        [OneController],
      ),
      async (running) => {
        const who = nextClient();
        const shown = async () => {
          const response = await running.get('/one', who);
          const header = (name: string) => response.headers.get(name);
          return {
            ...(await seen(response)),
            legacy: [
              header('x-ratelimit-limit'),
              header('x-ratelimit-remaining'),
              header('x-ratelimit-reset'),
            ],
          };
        };
        const expected = (seconds: number) => ({
          status: 429,
          retryAfter: String(seconds),
          policy: '"default";q=1;w=60',
          rateLimit: `"default";r=0;t=${seconds}`,
          contentType: expect.stringMatching(/^application\/json/),
          body: {
            statusCode: 429,
            error: 'Too Many Requests',
            message: `Rate limit exceeded ("default"); retry in ${seconds} s.`,
            retryAfter: seconds,
          },
          legacy: ['1', '0', String(seconds)],
        });
        expect((await running.get('/one', who)).status).toBe(200);
        const answers = [await shown(), await shown()];
        for (const step of [1_000, 0, 500, 500, 1]) {
          clock.advance(step);
          answers.push(await shown());
        }
        expect(answers).toEqual([60, 60, 59, 59, 59, 58, 58].map(expected));
      },
    );
  });

  it.each([
    ['app.useGlobalFilters', CountingFilter, OneController, '/one'],
    ['app.useGlobalFilters, catching everything', CatchAllFilter, OneController, '/one'],
    ['@UseFilters on the controller', undefined, FilteredController, '/filtered'],
  ])('hands every 429 to an app filter registered by %s', async (_, global, controller, path) => {
    await withApp(
      startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: redis.server.url,
            prefix: `filtered-${adapter}`,
            keyBy: byClientHeader,
          }),
        ],
        [controller],
        { configure: (app) => global && app.useGlobalFilters(new global()) },
      ),
      async (running) => {
        // The five requests in one fixed window on Redis's clock.
        await untilWindowHasRoom(redis.server, 60_000);
        const who = nextClient();
        expect((await running.get(path, who)).status).toBe(200);
        for (let i = 0; i < 4; i++) {
          const denied = await running.get(path, who);
          expect(denied.status).toBe(HttpStatus.TOO_MANY_REQUESTS);
          expect(await denied.json()).toEqual({ ownFilter: true, retryAfter: expect.any(Number) });
        }
        expect(CountingFilter.seen).toBe(4);
      },
    );
  });

  it('keeps nothing of the requests it denied', async () => {
    const requests: WeakRef<object>[] = [];
    await withApp(
      startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: redis.server.url,
            prefix: `collected-${adapter}`,
            // Time stands still: on the wall clock, a minute could turn between two requests.
            clock: new VirtualClock(1_700_000_040_000).read,
            keyBy: (context) => {
              requests.push(new WeakRef(context.getArgByIndex<object>(0)));
              return byClientHeader(context);
            },
          }),
        ],
        [OneController],
      ),
      async (running) => {
        const who = nextClient();
        expect((await running.get('/one', who)).status).toBe(200);
        for (let i = 0; i < 50; i++) expect((await running.get('/one', who)).status).toBe(429);
        // WeakRefs hold their targets until the current job ends.
        await new Promise((resolve) => setImmediate(resolve));
        gc();
        expect(requests).toHaveLength(51);
        // Only the last request's objects may still be referenced by its keep-alive socket.
        expect(requests.filter((ref) => ref.deref() !== undefined).length).toBeLessThanOrEqual(1);
      },
    );
  });
});
