import { Controller, Get } from '@nestjs/common';
import {
  RateLimit,
  RateLimiter,
  RateLimitModule,
  type RateLimitOutcome,
  type RateLimitPolicy,
} from '../../lib/index.js';
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
class TrialController {
  @Get('trial')
  @RateLimit(
    { name: 'enforced', algorithm: 'fixed-window', limit: 3, window: '1m' },
    { name: 'tight', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
    { name: 'loose', algorithm: 'sliding-window-log', limit: 10, window: '1m', shadow: true },
  )
  trial() {
    return 'ok';
  }

  @Get('only-shadow')
  @RateLimit({ algorithm: 'leaky-bucket', limit: 1, window: '1m', burst: 1, shadow: true })
  onlyShadow() {
    return 'ok';
  }
}

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])(
  'shadow policies over HTTP with %s',
  (adapter) => {
    let client = 0;
    const nextClient = () => `shadow-${++client}-${Date.now()}`;

    it('decide, charge as if alone, show in headers and the hook, log would-be denials, and never block', async () => {
      const logger = new RecordingLogger();
      const outcomes: RateLimitOutcome[][] = [];
      const running = startApp(
        adapter,
        [
          RateLimitModule.forRoot({
            redis: redis.server.url,
            prefix: `shadow-${adapter}`,
            keyBy: byClientHeader,
            onDecision: (event) => outcomes.push([event.outcome, ...event.outcomes]),
          }),
        ],
        [TrialController],
        { logger },
      );
      await withApp(running, async (app) => {
        // The four requests in one fixed window of 'enforced' and 'tight' on Redis's clock.
        await untilWindowHasRoom(redis.server, 60_000);
        const who = nextClient();
        const responses = [];
        for (let i = 0; i < 4; i++) responses.push(await app.get('/trial', who));
        expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 429]);
        expect(responses.map((response) => response.headers.get('ratelimit'))).toEqual(
          [
            '"enforced";r=2;t=60, "tight";r=0;t=60, "loose";r=9;t=60',
            '"enforced";r=1;t=60, "tight";r=0;t=60, "loose";r=8;t=60',
            '"enforced";r=0;t=60, "tight";r=0;t=60, "loose";r=7;t=60',
            // Denied by "enforced", the request is still charged to "loose", as if alone.
            '"enforced";r=0;t=60, "tight";r=0;t=60, "loose";r=6;t=60',
          ].map((value) => expect.stringMatching(value.replaceAll('t=60', 't=\\d+'))),
        );
        expect(responses[0].headers.get('ratelimit-policy')).toBe(
          '"enforced";q=3;w=60, "tight";q=1;w=60, "loose";q=10;w=60',
        );
        const denial = (await responses[3].json()) as { message: string };
        expect(denial.message).toBe(
          `Rate limit exceeded ("enforced"); retry in ${responses[3].headers.get('retry-after')} s.`,
        );
        // A leaky-bucket shadow neither delays nor denies.
        const started = Date.now();
        expect(await sequentially(3, () => app.get('/only-shadow', who))).toEqual([200, 200, 200]);
        expect(Date.now() - started).toBeLessThan(5_000);
      });
      expect(outcomes).toEqual([
        ['allowed', 'allowed', 'allowed', 'allowed'],
        ['allowed', 'allowed', 'shadow_denied', 'allowed'],
        ['allowed', 'allowed', 'shadow_denied', 'allowed'],
        ['denied', 'denied', 'shadow_denied', 'allowed'],
        ['allowed', 'allowed'],
        ['allowed', 'shadow_denied'],
        ['allowed', 'shadow_denied'],
      ]);
      expect(logger.warnings).toEqual([
        expect.stringMatching(
          /^shadow policy "tight" would have denied shadow-\d+-\d+ \(not enforced\)$/,
        ),
      ]);
    });

    it('through the service: consume is decided by the enforced policies, shadow results marked', async () => {
      await withApp(
        startApp(
          adapter,
          [RateLimitModule.forRoot({ redis: redis.server.url, prefix: `svc-${adapter}` })],
          [],
        ),
        async (running) => {
          const limiter = running.app.get(RateLimiter);
          const policies: RateLimitPolicy[] = [
            { name: 'enforced', algorithm: 'token-bucket', limit: 2, window: '1m' },
            { name: 'trial', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
          ];
          // The three decisions in one fixed window of 'trial' on Redis's clock.
          await untilWindowHasRoom(redis.server, 60_000);
          const key = nextClient();
          const decisions = [];
          for (let i = 0; i < 3; i++) decisions.push(await limiter.consume(key, policies));
          expect(
            decisions.map(({ allowed, results }) => [
              allowed,
              results.map((r) => [r.allowed, r.remaining, r.shadow]),
            ]),
          ).toEqual([
            [
              true,
              [
                [true, 1, undefined],
                [true, 0, true],
              ],
            ],
            [
              true,
              [
                [true, 0, undefined],
                [false, 0, true],
              ],
            ],
            [
              false,
              [
                [false, 0, undefined],
                [false, 0, true],
              ],
            ],
          ]);
          expect((await limiter.peek(key, policies[1])).results[0]).toMatchObject({
            allowed: false,
            shadow: true,
          });
          // Alone, a shadow policy never denies.
          expect((await limiter.consume(key, policies[1])).allowed).toBe(true);
        },
      );
    });
  },
);
