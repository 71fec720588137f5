import type { INestMicroservice, Type } from '@nestjs/common';
import {
  ClientProxyFactory,
  type ClientProxy,
  type MicroserviceOptions,
  Transport,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { freePort } from './free-port.js';

export interface RunningService {
  readonly app: INestMicroservice;
  /** Sends a message through a real TCP client; resolves to its reply or its error. */
  send(pattern: string, data: string): Promise<{ reply?: unknown; error?: unknown }>;
  close(): Promise<void>;
}

/**
 * A standalone TCP microservice of `controllers` with RateLimitModule on `options`, on a
 * free port of 127.0.0.1, and a client connected to it.
 */
export async function startService(
  options: RateLimitModuleOptions,
  controllers: Type[],
): Promise<RunningService> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers,
  }).compile();
  const port = await freePort();
  const app = moduleRef.createNestMicroservice<MicroserviceOptions>({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port },
  });
  app.useLogger(false);
  await app.listen();
  const client: ClientProxy = ClientProxyFactory.create({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port },
  });
  await client.connect();
  return {
    app,
    send: (pattern, data) =>
      firstValueFrom(client.send(pattern, data)).then(
        (reply: unknown) => ({ reply }),
        (error: unknown) => ({ error }),
      ),
    close: async () => {
      await client.close();
      await app.close();
    },
  };
}
