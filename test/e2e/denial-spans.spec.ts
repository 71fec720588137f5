import { createRequire } from 'node:module';
import { Controller, Get } from '@nestjs/common';
import * as routerExecutionContext from '@nestjs/core/router/router-execution-context.js';
import { NestInstrumentation } from '@opentelemetry/instrumentation-nestjs-core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { type AdapterKind, byClientHeader, startApp, withApp } from '../support/test-app.js';

/**
 * OpenTelemetry's Nest instrumentation, applied as its require hook would apply it: under
 * Jest's module registry (and Nest 12's ESM) the hook never sees @nestjs/core load, so its
 * patch is run on the module the app uses. Each request's span is the one it opens around the
 * handler Nest builds for a route (guards included), ended when that handler's promise settles.
 */
function instrumentNest(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const instrumentation = new NestInstrumentation({ enabled: false });
  instrumentation.setTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  const nestVersion = (
    createRequire(import.meta.url)('@nestjs/core/package.json') as { version: string }
  ).version;
  const [definition] = [instrumentation.getModuleDefinitions()].flat();
  const file = definition.files.find(({ name }) =>
    name.endsWith('router/router-execution-context.js'),
  )!;
  file.patch!(routerExecutionContext, nestVersion);
  return exporter;
}

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ limit: 1, window: '1h' })
  limited() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit({ limit: 100, window: '1h', failureMode: 'closed' })
  closed() {
    return 'ok';
  }
}

const REQUESTS = 20;

describe.each<AdapterKind>(['express', 'fastify'])(
  'Denials under the OpenTelemetry Nest instrumentation on %s',
  (adapter) => {
    let server: RedisServer;
    let exporter: InMemorySpanExporter;

    beforeAll(async () => {
      server = await startRedisServer();
      exporter = instrumentNest();
    });
    afterAll(() => server.stop());
    beforeEach(() => exporter.reset());

    /** The ended spans of requests to `path`, by the status recorded on them. */
    const requestSpans = (path: string): ReadableSpan[] =>
      exporter
        .getFinishedSpans()
        .filter(
          (span) =>
            span.attributes['nestjs.type'] === 'request_context' &&
            String(span.attributes['url.full']).startsWith(path),
        );

    it('ends the span of every 429 and every 503', async () => {
      const options = { redis: server.url, keyBy: byClientHeader, timeout: 100 };
      await withApp(
        startApp(adapter, [RateLimitModule.forRoot(options)], [LimitedController]),
        async (running) => {
          const limited = await Promise.all(
            Array.from({ length: REQUESTS }, () => running.get('/limited', 'hot')),
          );
          expect(limited.map((response) => response.status).sort()).toEqual([
            200,
            ...Array<number>(REQUESTS - 1).fill(429),
          ]);
          // A denial on the hot key again, now answered by the deny cache.
          expect((await running.get('/limited', 'hot')).status).toBe(429);

          await server.kill();
          const closed = await Promise.all(
            Array.from({ length: REQUESTS }, (_, i) => running.get('/closed', `c${i}`)),
          );
          expect(closed.map((response) => response.status)).toEqual(
            Array<number>(REQUESTS).fill(503),
          );
          await server.restart();

          const limitedSpans = requestSpans('/limited');
          expect(limitedSpans).toHaveLength(REQUESTS + 1);
          const failed = limitedSpans.filter((span) => span.status.message !== undefined);
          expect(failed).toHaveLength(REQUESTS);
          expect(requestSpans('/closed')).toHaveLength(REQUESTS);
          for (const span of [...failed, ...requestSpans('/closed')]) {
            expect(span.events.map((event) => event.name)).toEqual(['exception']);
          }
        },
      );
    });
  },
);
