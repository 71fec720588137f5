import type { DynamicModule, INestApplication, LoggerService, Type } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';

export type AdapterKind = 'express' | 'fastify';

export interface RunningApp {
  readonly app: INestApplication;
  readonly url: string;
  /** GET with an `x-client` header, so each test can be its own client. */
  get(path: string, client?: string): Promise<Response>;
  close(): Promise<void>;
}

/** Boots a Nest app on the chosen HTTP adapter, listening on a free port of 127.0.0.1. */
export async function startApp(
  adapter: AdapterKind,
  imports: (DynamicModule | Type)[],
  controllers: Type[],
  {
    customize = (builder) => builder,
    logger = false,
    trustProxy = false,
    configure,
  }: {
    customize?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
    logger?: LoggerService | false;
    /** Behind one proxy: the client IP comes from X-Forwarded-For (Express 'trust proxy', Fastify trustProxy). */
    trustProxy?: boolean;
    /** Runs before the app listens, e.g. to choose its WebSocket adapter. */
    configure?: (app: INestApplication) => void;
  } = {},
): Promise<RunningApp> {
  const moduleRef = await customize(Test.createTestingModule({ imports, controllers })).compile();
  const app =
    adapter === 'fastify'
      ? moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter({ trustProxy }))
      : moduleRef.createNestApplication();
  if (adapter === 'express' && trustProxy) app.getHttpAdapter().getInstance().set('trust proxy', 1);
  app.useLogger(logger);
  configure?.(app);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    app,
    url,
    get: (path, client = 'anonymous') => fetch(url + path, { headers: { 'x-client': client } }),
    close: () => app.close(),
  };
}

/** Runs `body` against a started app, and closes the app whatever happens. */
export async function withApp<T>(
  starting: Promise<RunningApp>,
  body: (running: RunningApp) => Promise<T>,
): Promise<T> {
  const running = await starting;
  try {
    return await body(running);
  } finally {
    await running.close();
  }
}

/** The statuses of `count` requests made one after another. */
export async function sequentially(
  count: number,
  request: () => Promise<Response>,
): Promise<number[]> {
  const result: number[] = [];
  for (let i = 0; i < count; i++) result.push((await request()).status);
  return result;
}

/** Keys clients by the `x-client` header the helpers send. */
export const byClientHeader = (context: import('@nestjs/common').ExecutionContext): string =>
  String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-client'],
  );

/** Collects what the app logs, to check what an operator would see. */
export class RecordingLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}
