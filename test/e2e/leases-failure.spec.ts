import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  RateLimit,
  RateLimitModule,
  type RateLimitDecisionEvent,
  type RateLimitOutcome,
} from '../../lib/index.js';
import { type RedisServer, startRedisServer, untilWindowHasRoom } from '../support/redis-server.js';
import { byClientHeader, type RunningApp, startApp } from '../support/test-app.js';
import { eventually, timed } from '../support/eventually.js';

const TIMEOUT_MS = 100;
/** Issue #19's bound, as in chaos.spec.ts: every answer during a fault within the deadline plus 50 ms. */
const FAULT_ANSWER_MS = TIMEOUT_MS + 50;
const LIMIT = 100;
const LEASE = 10;
const WINDOW_MS = 3_600_000;
/** Room left in the hour on Redis's clock: the outage, the restart and the recovery fit in it. */
const ROOM_MS = 20_000;

const leased = { limit: LIMIT, window: WINDOW_MS, lease: LEASE } as const;

@Controller()
class LeasedController {
  /** The module's failure mode: open. */
  @Get('open')
  @RateLimit({ algorithm: 'fixed-window', ...leased })
  open() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit({ algorithm: 'fixed-window', ...leased, failureMode: 'closed' })
  closed() {
    return 'ok';
  }

  /** A bucket refilling 100 an hour: its lease of 10 ends after 6 minutes, past the test. */
  @Get('bucket')
  @RateLimit({ algorithm: 'token-bucket', ...leased, failureMode: 'closed' })
  bucket() {
    return 'ok';
  }

  /** A leased fleet-wide budget beside an exact per-client one: every request needs Redis. */
  @Get('checkout')
  @RateLimit(
    { name: 'fleet', algorithm: 'fixed-window', ...leased, keyBy: () => 'fleet' },
    { name: 'per-client', algorithm: 'fixed-window', limit: LIMIT, window: WINDOW_MS },
  )
  checkout() {
    return 'ok';
  }
}

const PATHS = ['/open', '/closed', '/bucket'] as const;

/** `remaining` of `policy` in the RateLimit header, or undefined without one. */
function remainingOf(response: Response, policy = 'default'): number | undefined {
  const header = response.headers.get('ratelimit');
  const match = header && new RegExp(`"${policy}";r=(\\d+)`).exec(header);
  return match ? Number(match[1]) : undefined;
}

/** The keys in `server` matching `pattern`, on a connection of the test's own. */
async function keysIn(server: RedisServer, pattern = '*'): Promise<string[]> {
  const admin = new Redis(server.url);
  try {
    return await admin.keys(pattern);
  } finally {
    admin.disconnect();
  }
}

/** Issue #21 item 4: a pod whose Redis dies while it holds leases, over HTTP. */
describe('leases when Redis fails', () => {
  let server: RedisServer;
  let running: RunningApp;
  const outcomes: RateLimitOutcome[] = [];
  beforeEach(async () => {
    server = await startRedisServer();
    outcomes.length = 0;
    running = await startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: server.url,
          keyBy: byClientHeader,
          timeout: TIMEOUT_MS,
          onDecision: (event: RateLimitDecisionEvent) => outcomes.push(event.outcome),
        }),
      ],
      [LeasedController],
    );
  });
  afterEach(async () => {
    await running.close();
    await server.stop();
  });

  it('admits what the pod holds, then fails open or closed within the deadline, then leases from Redis again', async () => {
    await untilWindowHasRoom(server, WINDOW_MS, ROOM_MS);
    for (const path of PATHS) {
      const first = await running.get(path, 'a');
      expect(first.status).toBe(200);
      expect(remainingOf(first)).toBe(LIMIT - 1);
    }
    // One lease per route: the pod holds LEASE - 1 of each.
    expect(await keysIn(server)).toHaveLength(PATHS.length);
    await server.kill();

    outcomes.length = 0;
    for (const path of PATHS) {
      const remaining: (number | undefined)[] = [];
      for (let i = 1; i < LEASE; i++) {
        const response = await running.get(path, 'a');
        expect(response.status).toBe(200);
        remaining.push(remainingOf(response));
      }
      // Decided from the lease, as if Redis were there: the count goes on down.
      expect(remaining).toEqual(Array.from({ length: LEASE - 1 }, (_, i) => LIMIT - 2 - i));
    }
    expect(outcomes).toEqual(Array(PATHS.length * (LEASE - 1)).fill('allowed'));

    // The lease spent, each request needs Redis: the route's failure mode answers.
    outcomes.length = 0;
    for (let i = 0; i < 3; i++) {
      for (const path of PATHS) {
        const { response, ms } = await timed(() => running.get(path, 'a'));
        expect(ms).toBeLessThan(FAULT_ANSWER_MS);
        if (path === '/open') {
          // Admitted without a decision, as exact mode fails open: no RateLimit header.
          expect(response.status).toBe(200);
          expect(response.headers.get('ratelimit')).toBeNull();
        } else {
          expect(response.status).toBe(503);
          expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        }
      }
    }
    expect(outcomes).toEqual(
      Array(3).fill(['failed_open', 'failed_closed', 'failed_closed']).flat(),
    );

    // Redis back, empty: each route takes a new lease there, and admits no more than LIMIT.
    await server.restart();
    for (const path of PATHS) {
      await eventually(async () => remainingOf(await running.get(path, 'a')) !== undefined);
      let admitted = 1;
      for (;;) {
        const response = await running.get(path, 'a');
        if (response.status !== 200) {
          expect(response.status).toBe(429);
          break;
        }
        expect(remainingOf(response)).toBeDefined();
        admitted++;
      }
      // The bucket refills meanwhile: a token at most in the seconds this takes.
      expect(admitted).toBeGreaterThanOrEqual(LIMIT);
      expect(admitted).toBeLessThanOrEqual(path === '/bucket' ? LIMIT + 1 : LIMIT);
    }
  });

  it('keeps the fleet units a failed request reserved: back on Redis, the pod pays from them', async () => {
    await untilWindowHasRoom(server, WINDOW_MS, ROOM_MS);
    const fleet = async () => (await keysIn(server, '*{fleet}*')).length;
    const first = await running.get('/checkout', 'a');
    expect(remainingOf(first, 'fleet')).toBe(LIMIT - 1);
    expect(await fleet()).toBe(1);
    await server.kill();

    // The per-client policy needs Redis on every request; the fleet's reserved unit goes
    // back to the pod's lease when the call fails.
    for (let i = 0; i < LEASE; i++) {
      const { response, ms } = await timed(() => running.get('/checkout', `down-${i}`));
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit')).toBeNull();
      expect(ms).toBeLessThan(FAULT_ANSWER_MS);
    }

    await server.restart();
    let client = 0;
    await eventually(
      async () =>
        remainingOf(await running.get('/checkout', `up-${client++}`), 'fleet') !== undefined,
    );
    // Paid from the first lease's units, all still held: no new fleet lease in Redis.
    expect(await fleet()).toBe(0);
    const next = await running.get('/checkout', 'b');
    expect(next.status).toBe(200);
    expect(remainingOf(next, 'fleet')).toBe(LIMIT - 3);
    expect(await fleet()).toBe(0);
  });
});
