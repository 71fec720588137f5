import { Controller, Get, type ExecutionContext } from '@nestjs/common';
import { connect } from 'node:net';
import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import {
  type AdapterKind,
  byClientHeader,
  type RunningApp,
  startApp,
} from '../support/test-app.js';

/** Node's default limit on a request's header section, which Express and Fastify both keep. */
const MAX_HEADER_BYTES = 16_384;
const LIMIT = 3;

/** The cost a request asks for in `x-cost`: `number:<n>` as a number, anything else as it is. */
function costFromHeader(context: ExecutionContext): number {
  const raw = String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-cost'],
  );
  const value = raw.startsWith('number:') ? Number(raw.slice('number:'.length)) : raw;
  // A cost function written in TypeScript can still hand back anything at run time.
  return value as number;
}

@Controller()
class HostileController {
  @Get('limited')
  @RateLimit({ algorithm: 'fixed-window', limit: LIMIT, window: '1h' })
  limited() {
    return 'ok';
  }

  @Get('costly')
  @RateLimit(
    { name: 'fixed', algorithm: 'fixed-window', limit: 10, window: '1h' },
    { name: 'priced', algorithm: 'token-bucket', limit: 10, window: '1h', cost: costFromHeader },
  )
  costly() {
    return 'ok';
  }
}

/** One request over a raw socket, so header bytes reach the server exactly as written. */
function rawGet(url: string, path: string, headerLines: Buffer): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let reply = '';
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(reply);
      if (status) {
        socket.destroy();
        resolve(Number(status[1]));
      }
    });
    socket.once('error', reject);
    socket.write(
      Buffer.concat([
        Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n`),
        headerLines,
        Buffer.from('\r\n'),
      ]),
    );
  });
}

// One server for both adapters: its afterAll comes after theirs, which close the apps.
const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])('hostile input on %s', (adapter) => {
  let running: RunningApp;
  beforeAll(async () => {
    // The other adapter's run left its counts: each starts from an empty server.
    await redis.admin.flushall();
    running = await startApp(
      adapter,
      [RateLimitModule.forRoot({ redis: redis.server.url, keyBy: byClientHeader })],
      [HostileController],
    );
  });
  afterAll(async () => {
    await running?.close();
  });
  // The routes' fixed windows of an hour count across each test's requests on Redis's clock.
  beforeEach(() => untilWindowHasRoom(redis.admin, 3_600_000));

  /** Every key the limiter wrote: short, expiring. */
  async function expectKeysBoundedAndExpiring(): Promise<void> {
    const keys = await redis.admin.keys('*');
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(Buffer.byteLength(key)).toBeLessThan(256);
      expect(await redis.admin.pttl(key)).toBeGreaterThan(0);
    }
  }

  it('limits a client key as long as the largest header the adapter accepts', async () => {
    // Request line, Host, Connection and the header's own name and separators fit in 200 bytes.
    const key = 'k'.repeat(MAX_HEADER_BYTES - 200);
    const statuses = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push((await running.get('/limited', key)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    // One byte more than Node accepts is refused before the app sees it, never a 500.
    const tooLong = Buffer.from(`x-client: ${'k'.repeat(MAX_HEADER_BYTES)}\r\n`);
    expect(await rawGet(running.url, '/limited', tooLong)).toBe(431);
    await expectKeysBoundedAndExpiring();
  });

  it('limits a client key that is not valid UTF-8, as one client', async () => {
    // A lone continuation byte, an overlong encoding, bytes that never occur in UTF-8.
    const header = Buffer.concat([
      Buffer.from('x-client: '),
      Buffer.from([0x80, 0xc0, 0xaf, 0xfe, 0xff, 0x7b, 0x7d]),
      Buffer.from('\r\n'),
    ]);
    const statuses = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push(await rawGet(running.url, '/limited', header));
    expect(statuses).toEqual([200, 200, 200, 429]);
    await expectKeysBoundedAndExpiring();
  });

  it.each([
    ['NaN', 'number:NaN'],
    ['Infinity', 'number:Infinity'],
    ['-1', 'number:-1'],
    ['0', 'number:0'],
    ['1.5', 'number:1.5'],
    ['a string', '2'],
  ])('answers 400 for a cost of %s and charges no policy', async (_label, cost) => {
    const client = `cost-${adapter}-${cost}`;
    const send = (header: string) =>
      fetch(running.url + '/costly', { headers: { 'x-client': client, 'x-cost': header } });
    const refused = await send(cost);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual(
      expect.objectContaining({ statusCode: 400, message: expect.stringContaining('cost') }),
    );
    // The first valid request finds both budgets untouched.
    const admitted = await send('number:1');
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('ratelimit')).toMatch(/^"fixed";r=9;t=\d+, "priced";r=9;t=\d+$/);
  });
});
