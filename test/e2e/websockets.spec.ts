import { type INestApplication, Module, UseFilters } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { WsAdapter } from '@nestjs/platform-ws';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { once } from 'node:events';
import { io } from 'socket.io-client';
import { WebSocket } from 'ws';
import {
  RateLimit,
  RateLimitExceededException,
  RateLimitExceptionFilter,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { KeyRecordingStore, withRedisDown } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import { type RunningApp, startApp } from '../support/test-app.js';

@WebSocketGateway()
// Nest applies no global filter to gateways: the app binds it for the exceptions it throws.
@UseFilters(RateLimitExceptionFilter)
class ChatGateway {
  @SubscribeMessage('ping')
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1m' })
  ping(@MessageBody() data: string) {
    return { event: 'pong', data };
  }

  /** Denied by the app itself, as after a RateLimiter call of its own. */
  @SubscribeMessage('quota')
  quota() {
    throw new RateLimitExceededException('Monthly quota spent.', 7);
  }

  @SubscribeMessage('echo')
  echo(@MessageBody() data: string) {
    return { event: 'pong', data };
  }
}

@Module({ providers: [ChatGateway] })
class ChatModule {}

interface Message {
  event: string;
  data: unknown;
}

/** A connected client that sends one message and waits for the one that answers it. */
interface Client {
  call(event: string, data: string): Promise<Message>;
  close(): void;
}

/** Hands out messages in arrival order, to whoever asks next. */
function inbox() {
  const queued: Message[] = [];
  const waiting: ((message: Message) => void)[] = [];
  return {
    push: (message: Message) => {
      const take = waiting.shift();
      if (take) take(message);
      else queued.push(message);
    },
    next: () =>
      new Promise<Message>((resolve) => {
        const message = queued.shift();
        if (message) resolve(message);
        else waiting.push(resolve);
      }),
  };
}

async function socketIoClient(url: string): Promise<Client> {
  const socket = io(url, { transports: ['websocket'], forceNew: true, reconnection: false });
  const messages = inbox();
  socket.onAny((event: string, data: unknown) => messages.push({ event, data }));
  await new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(undefined));
    socket.once('connect_error', reject);
  });
  return {
    call: (event, data) => (socket.emit(event, data), messages.next()),
    close: () => socket.close(),
  };
}

async function wsClient(url: string): Promise<Client> {
  const socket = new WebSocket(url.replace(/^http/, 'ws'));
  const messages = inbox();
  socket.on('message', (raw) => messages.push(JSON.parse(String(raw)) as Message));
  await once(socket, 'open');
  return {
    call: (event, data) => (socket.send(JSON.stringify({ event, data })), messages.next()),
    close: () => socket.close(),
  };
}

const transports: [string, (app: INestApplication) => void, (url: string) => Promise<Client>][] = [
  ['socket.io', (app) => app.useWebSocketAdapter(new IoAdapter(app)), socketIoClient],
  ['ws', (app) => app.useWebSocketAdapter(new WsAdapter(app)), wsClient],
];

const redis = useRedisServer();

let apps = 0;
describe.each(transports)('WebSocket gateway on %s', (_name, adapter, connect) => {
  const boot = (options: RateLimitModuleOptions = {}) =>
    startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `ws-${++apps}-${Date.now()}`,
          ...options,
        }),
        ChatModule,
      ],
      [],
      { configure: adapter },
    );
  const session = async (running: RunningApp, body: (client: Client) => Promise<void>) => {
    const client = await connect(running.url);
    try {
      await body(client);
    } finally {
      client.close();
    }
  };

  it('limits a message handler to its limit, then answers a WsException with code and retryAfter', async () => {
    const running = await boot();
    try {
      // Both sessions in one fixed window of 'ping' on Redis's clock.
      await untilWindowHasRoom(redis.server, 60_000);
      await session(running, async (client) => {
        expect(await client.call('ping', 'a')).toEqual({ event: 'pong', data: 'a' });
        expect(await client.call('ping', 'b')).toEqual({ event: 'pong', data: 'b' });
        const denied = await client.call('ping', 'c');
        expect(denied).toEqual({
          event: 'exception',
          data: {
            status: 'error',
            code: 'RATE_LIMITED',
            message: expect.stringContaining('Rate limit exceeded ("default")'),
            retryAfter: expect.any(Number),
          },
        });
        const { retryAfter } = denied.data as { retryAfter: number };
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(await client.call('echo', 'unlimited')).toEqual({
          event: 'pong',
          data: 'unlimited',
        });
      });
      // The budget is the client address's, not the connection's.
      await session(running, async (client) => {
        expect(await client.call('ping', 'd')).toMatchObject({ event: 'exception' });
      });
    } finally {
      await running.close();
    }
  });

  it('answers a RateLimitExceededException thrown by a handler as the same WsException', async () => {
    const running = await boot({ contextTypes: ['http'] });
    try {
      await session(running, async (client) => {
        expect(await client.call('quota', 'a')).toEqual({
          event: 'exception',
          data: {
            status: 'error',
            code: 'RATE_LIMITED',
            message: 'Monthly quota spent.',
            retryAfter: 7,
          },
        });
      });
    } finally {
      await running.close();
    }
  });

  it("keys the client by its socket's remote address", async () => {
    const store = new KeyRecordingStore();
    const running = await boot({ store });
    try {
      await session(running, async (client) => {
        await client.call('ping', 'a');
      });
      expect(store.keys).toEqual([
        expect.stringMatching(/^ws-\d+-\d+:\{127\.0\.0\.1\}:default:.*:ChatGateway\.ping$/),
      ]);
    } finally {
      await running.close();
      await store.close();
    }
  });

  it('fails open or closed as over HTTP when Redis is down', async () => {
    await withRedisDown(boot, async (open, closed) => {
      await session(open, async (client) => {
        expect(await client.call('ping', 'a')).toEqual({ event: 'pong', data: 'a' });
      });
      await session(closed, async (client) => {
        expect(await client.call('ping', 'a')).toEqual({
          event: 'exception',
          data: expect.objectContaining({ code: 'RATE_LIMIT_UNAVAILABLE', retryAfter: 1 }),
        });
      });
    });
  });

  it("leaves gateways alone when contextTypes does not include 'ws'", async () => {
    const running = await boot({ contextTypes: ['http', 'graphql', 'rpc'] });
    try {
      await session(running, async (client) => {
        for (const data of ['a', 'b', 'c']) {
          expect(await client.call('ping', data)).toEqual({ event: 'pong', data });
        }
      });
    } finally {
      await running.close();
    }
  });
});
