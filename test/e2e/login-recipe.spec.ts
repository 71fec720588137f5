import {
  Body,
  Controller,
  type ExecutionContext,
  HttpCode,
  Post,
  UnauthorizedException,
} from '@nestjs/common';
import {
  type KeyResolver,
  RateLimit,
  RateLimiter,
  RateLimitModule,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { startRedisServer } from '../support/redis-server.js';
import { type AdapterKind, type RunningApp, startApp } from '../support/test-app.js';

/** docs/policies.md, "Protecting a login", as written there. */
const account: KeyResolver = (context: ExecutionContext) =>
  `account:${String(context.switchToHttp().getRequest<{ body?: { username?: string } }>().body?.username ?? '').toLowerCase()}`;

const ACCOUNT: RateLimitPolicy = {
  name: 'account',
  algorithm: 'fixed-window',
  limit: 5,
  window: '15m',
  keyBy: account,
  scope: 'global',
  count: 'failed',
  blockDuration: '15m',
  failureMode: 'closed',
};
const ADDRESS: RateLimitPolicy = {
  name: 'address',
  algorithm: 'fixed-window',
  limit: 50,
  window: '15m',
  count: 'failed',
  blockDuration: '1h',
  failureMode: 'closed',
};

interface Credentials {
  username: string;
  password: string;
}

@Controller()
class LoginController {
  @Post('login')
  @HttpCode(200)
  @RateLimit(ACCOUNT, ADDRESS)
  login(@Body() credentials: Credentials) {
    if (credentials.password !== `${credentials.username}-secret`) {
      throw new UnauthorizedException();
    }
    return { session: credentials.username };
  }
}

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])('the login recipe over %s', (adapter) => {
  let running: RunningApp;
  let run = 0;
  let address = 0;
  /** Each test its own accounts and client addresses (behind one trusted proxy). */
  let prefix: string;
  const attempt = (username: string, right: boolean, from = `10.0.${run}.1`) =>
    fetch(`${running.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({
        username: `${prefix}${username}`,
        password: right ? `${prefix}${username}-secret` : 'guess',
      }),
    });
  const failures = async (username: string) =>
    (await running.app.get(RateLimiter).peek(`account:${prefix}${username}`, ACCOUNT)).results[0]
      .remaining;

  beforeAll(async () => {
    running = await startApp(
      adapter,
      [RateLimitModule.forRoot({ redis: redis.server.url, prefix: `recipe-${adapter}` })],
      [LoginController],
      { trustProxy: true },
    );
  });
  afterAll(() => running.close());
  beforeEach(() => {
    run++;
    prefix = `r${run}-${Date.now()}-`;
  });

  it('five failures per account, then a block that refuses even the right password', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await attempt('Alice', false);
      expect(response.status).toBe(401);
      expect(response.headers.get('ratelimit')).toContain(`"account";r=${4 - i}`);
    }
    const blocked = await attempt('alice', true);
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toBe('900');
    expect(await blocked.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Rate limit exceeded ("account"); retry in 900 s.',
      retryAfter: 900,
    });
    // Another account from the same address still logs in.
    expect((await attempt('bob', true)).status).toBe(200);
  });

  it('successful logins do not count', async () => {
    for (let i = 0; i < 10; i++) {
      expect((await attempt('carol', true)).status).toBe(200);
      await eventually(async () => (await failures('carol')) === 5);
    }
    for (let i = 0; i < 5; i++) expect((await attempt('carol', false)).status).toBe(401);
    expect((await attempt('carol', true)).status).toBe(429);
  });

  it('fifty failures per address, whatever the accounts, then the address is blocked', async () => {
    address++;
    const from = `10.1.${address}.${run}`;
    for (let i = 0; i < 50; i++) {
      expect((await attempt(`user${i % 25}`, false, from)).status).toBe(401);
    }
    const blocked = await attempt('dave', true, from);
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toBe('3600');
    // Dave's account has failed nowhere: from another address, he logs in.
    expect((await attempt('dave', true, `10.2.${address}.${run}`)).status).toBe(200);
  });
});

describe('the login recipe while Redis is away', () => {
  it('answers 503 with Retry-After: closed, whatever the module says', async () => {
    const failing = await startRedisServer();
    const running = await startApp(
      'express',
      [RateLimitModule.forRoot({ redis: failing.url, failureMode: 'open' })],
      [LoginController],
    );
    try {
      await failing.kill();
      const response = await fetch(`${running.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'erin', password: 'erin-secret' }),
      });
      expect(response.status).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await response.json()).toMatchObject({
        statusCode: 503,
        error: 'Service Unavailable',
        retryAfter: Number(response.headers.get('retry-after')),
      });
    } finally {
      await running.close();
      await failing.stop();
    }
  });
});
