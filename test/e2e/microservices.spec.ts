import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  RateLimit,
  RateLimitExceededException,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { KeyRecordingStore, withRedisDown } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import { startService } from '../support/tcp-service.js';

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

const startPingService = (options: RateLimitModuleOptions) =>
  startService(options, [PingController]);

const redis = useRedisServer();

let services = 0;
describe('microservice message handlers over TCP', () => {
  const boot = (options: RateLimitModuleOptions = {}) =>
    startPingService({
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
