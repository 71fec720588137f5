import type { Type } from '@nestjs/common';
import { type RedisServer, startRedisServer } from './redis-server.js';
import { type RunningApp, startApp } from './test-app.js';
import { serveOpenApi } from '../../sample/openapi.js';

export interface RunningSample {
  readonly server: RedisServer;
  readonly running: RunningApp;
  /** Closes the app, stops its Redis and unsets the environment it was given. */
  stop(): Promise<void>;
}

/**
 * The sample app as `npm start` runs it with `env`, on a Redis of its own (REDIS_URL). Once
 * per test file: the sample's module reads its environment when it is first evaluated.
 */
export async function startSample(env: Record<string, string> = {}): Promise<RunningSample> {
  const server = await startRedisServer();
  const variables = { REDIS_URL: server.url, ...env };
  Object.assign(process.env, variables);
  const { AppModule } = (await import('../../sample/app.module.js')) as { AppModule: Type };
  const running = await startApp('express', [AppModule], [], { configure: serveOpenApi });
  return {
    server,
    running,
    stop: async () => {
      await running.close();
      await server.stop();
      for (const name of Object.keys(variables)) delete process.env[name];
    },
  };
}
