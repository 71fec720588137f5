import { Controller } from '@nestjs/common';
import {
  ClientProxyFactory,
  type ClientProxy,
  MessagePattern,
  type MicroserviceOptions,
  Payload,
  Transport,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import {
  RateLimit,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { freePort } from '../support/free-port.js';
import { KeyRecordingStore, withRedisDown } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';

@Controller()
class PingController {
  @MessagePattern('ping')
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1m' })
  ping(@Payload() data: string) {
    return `pong ${data}`;
  }

  /** Denied by the app itself, as after a RateLimiter call of its own. */
  @MessagePattern('quota')
  quota() {
    throw new RateLimitExceededException('Monthly quota spent.', 7);
  }

  @MessagePattern('echo')
  echo(@Payload() data: string) {
    return data;
  }
}

interface RunningService {
  /** Sends a message through a real TCP client; resolves to its reply or its error. */
  send(pattern: string, data: string): Promise<{ reply?: unknown; error?: unknown }>;
  close(): Promise<void>;
}

/** A standalone TCP microservice on a free port of 127.0.0.1, and a client connected to it. */
async function startService(options: RateLimitModuleOptions): Promise<RunningService> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [PingController],
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

const redis = useRedisServer();

let services = 0;
describe('microservice message handlers over TCP', () => {
  const boot = (options: RateLimitModuleOptions = {}) =>
    startService({
      redis: redis.server.url,
      prefix: `rpc-${++services}-${Date.now()}`,
      ...options,
    });

  it('limits a message handler to its limit, then answers an RpcException with code and retryAfter', async () => {
    const service = await boot();
    try {
      // The three messages in one fixed window of 'ping' on Redis's clock.
      await untilWindowHasRoom(redis.server, 60_000);
      expect(await service.send('ping', 'a')).toEqual({ reply: 'pong a' });
      expect(await service.send('ping', 'b')).toEqual({ reply: 'pong b' });
      const denied = await service.send('ping', 'c');
      expect(denied).toEqual({
        error: {
          status: 'error',
          code: 'RATE_LIMITED',
          message: expect.stringContaining('Rate limit exceeded ("default")'),
          retryAfter: expect.any(Number),
        },
      });
      const { retryAfter } = denied.error as { retryAfter: number };
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(await service.send('echo', 'unlimited')).toEqual({ reply: 'unlimited' });
    } finally {
      await service.close();
    }
  });

  it('answers a RateLimitExceededException thrown by a handler as the same RpcException', async () => {
    const service = await boot({ contextTypes: ['http'] });
    try {
      expect(await service.send('quota', 'a')).toEqual({
        error: {
          status: 'error',
          code: 'RATE_LIMITED',
          message: 'Monthly quota spent.',
          retryAfter: 7,
        },
      });
    } finally {
      await service.close();
    }
  });

  it("keys the client by its TCP connection's remote address", async () => {
    const store = new KeyRecordingStore();
    const service = await boot({ store });
    try {
      await service.send('ping', 'a');
      expect(store.keys).toEqual([
        expect.stringMatching(/^rpc-\d+-\d+:\{127\.0\.0\.1\}:default:.*:PingController\.ping$/),
      ]);
    } finally {
      await service.close();
      await store.close();
    }
  });

  it('fails open or closed as over HTTP when Redis is down', async () => {
    await withRedisDown(boot, async (open, closed) => {
      expect(await open.send('ping', 'a')).toEqual({ reply: 'pong a' });
      expect(await closed.send('ping', 'a')).toEqual({
        error: expect.objectContaining({ code: 'RATE_LIMIT_UNAVAILABLE', retryAfter: 1 }),
      });
    });
  });

  it("leaves message handlers alone when contextTypes does not include 'rpc'", async () => {
    const service = await boot({ contextTypes: ['http'] });
    try {
      for (const data of ['a', 'b', 'c']) {
        expect(await service.send('ping', data)).toEqual({ reply: `pong ${data}` });
      }
    } finally {
      await service.close();
    }
  });
});
