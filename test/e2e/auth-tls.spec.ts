import { jest } from '@jest/globals';
import { Controller, Get } from '@nestjs/common';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import {
  ALGORITHMS,
  RateLimit,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { freePort } from '../support/free-port.js';
import { LimiterFixture } from '../support/limiters.js';
import { type RedisServer, sendRawCommand, startRedisServer } from '../support/redis-server.js';
import { createTestCertificate, type TestCertificate } from '../support/tls-certificate.js';
import { byClientHeader, RecordingLogger, startApp, withApp } from '../support/test-app.js';

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1h' })
  limited() {
    return 'ok';
  }
}

const PASSWORD = 'harness-secret';

/** The start waits 2 s for Redis; anything near this means it hung. */
const START_BOUND_MS = 6_000;
const WITHIN_DEADLINE_MS = 1_500;

async function boot(redis: RateLimitModuleOptions['redis'], options: RateLimitModuleOptions = {}) {
  const logger = new RecordingLogger();
  const started = performance.now();
  const running = await startApp(
    'express',
    [RateLimitModule.forRoot({ redis, keyBy: byClientHeader, ...options })],
    [LimitedController],
    // The start-up warning comes while the module compiles, before the app's logger is set.
    { logger, customize: (builder) => builder.setLogger(logger) },
  );
  return { running, logger, startMs: performance.now() - started };
}

let clientCount = 0;

/** Redis decides: 200, 200, then 429, each with RateLimit headers. */
async function expectLimited(redis: RateLimitModuleOptions['redis']): Promise<void> {
  const { running } = await boot(redis);
  const clientKey = `limited-client-${++clientCount}`;
  await withApp(Promise.resolve(running), async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const response = await running.get('/limited', clientKey);
      expect(response.headers.get('ratelimit')).not.toBeNull();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });
}

/** A start that cannot reach Redis: a warning naming `cause`, then the failure mode, quickly. */
async function expectWarnedFailureMode(
  redis: RateLimitModuleOptions['redis'],
  cause: RegExp,
): Promise<void> {
  for (const failureMode of ['open', 'closed'] as const) {
    const { running, logger, startMs } = await boot(redis, { failureMode });
    await withApp(Promise.resolve(running), async () => {
      expect(startMs).toBeLessThan(START_BOUND_MS);
      expect(logger.warnings).toEqual([expect.stringMatching(cause)]);
      const started = performance.now();
      const response = await running.get('/limited', 'refused-client');
      expect(performance.now() - started).toBeLessThan(WITHIN_DEADLINE_MS);
      if (failureMode === 'open') {
        expect(response.status).toBe(200);
        expect(response.headers.get('ratelimit')).toBeNull();
      } else {
        expect(response.status).toBe(503);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    });
  }
}

describe('Redis with a password (requirepass)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ password: PASSWORD });
  });
  afterAll(() => server?.stop());

  it('decides with the password in the URL or in the options', async () => {
    await expectLimited(`redis://:${PASSWORD}@127.0.0.1:${server.port}`);
    await expectLimited({ host: '127.0.0.1', port: server.port, password: PASSWORD });
  });

  it('warns at start-up with the cause, then serves by the failure mode, for a wrong password', async () => {
    await expectWarnedFailureMode(`redis://:wrong@127.0.0.1:${server.port}`, /WRONGPASS/);
  }, 30_000);

  it('warns the same way when the password is missing', async () => {
    await expectWarnedFailureMode(server.url, /NOAUTH|Authentication required/i);
  }, 30_000);
});

describe('an ACL user with only the permissions the README lists', () => {
  const readmeAcl = /^ACL SETUSER (\S+) (.*)$/m.exec(
    readFileSync(new URL('../../README.md', import.meta.url), 'utf8'),
  );
  const user = readmeAcl?.[1] ?? '';
  const rules = readmeAcl?.[2].split(' ') ?? [];
  const password = rules.find((rule) => rule.startsWith('>'))?.slice(1) ?? '';
  let server: RedisServer;
  const setUser = (ruleList: readonly string[]) =>
    sendRawCommand(server.port, ['ACL', 'SETUSER', user, 'reset', ...ruleList], 1_000, PASSWORD);

  beforeAll(async () => {
    server = await startRedisServer({ password: PASSWORD });
  });
  afterAll(() => server?.stop());

  /**
   * Every algorithm through the service: charges up to a denial, a peek, a reset and a charge
   * again, so every command the scripts can call runs. Resolves to the first failure, if any;
   * a warning from the client (e.g. a skipped ready check) counts as one.
   */
  let runs = 0;
  async function everyAlgorithm(): Promise<unknown> {
    const url = `redis://${user}:${password}@127.0.0.1:${server.port}`;
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const fixture = new LimiterFixture('redis', url);
    fixture.client!.on('error', () => undefined);
    try {
      await Promise.race([fixture.ready(), sleep(1_000, undefined, { ref: false })]);
      for (const algorithm of ALGORITHMS) {
        const policy = { name: 'acl', algorithm, limit: 1, window: '1m' };
        const key = `acl-${algorithm}-${++runs}`;
        // The leaky bucket admits a second request at once, to wait its turn; not a third.
        const charges = [];
        for (let i = 0; i < 3; i++) charges.push(await fixture.limiter.consume(key, policy));
        const peek = await fixture.limiter.peek(key, policy);
        await fixture.limiter.reset(key, policy);
        const again = await fixture.limiter.consume(key, policy);
        expect({
          algorithm,
          allowed: [charges[0], charges[2], peek, again].map((d) => d.allowed),
        }).toEqual({ algorithm, allowed: [true, false, false, true] });
      }
      expect(warn).not.toHaveBeenCalled();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      warn.mockRestore();
      await fixture.close();
    }
  }

  it('is in the README', () => {
    expect(user).not.toBe('');
    expect(rules).toContain('~rl:*');
    expect(password).not.toBe('');
  });

  it('runs every algorithm, reset included', async () => {
    await setUser(rules);
    expect(await everyAlgorithm()).toBeUndefined();
  });

  it('is minimal: without any one of its commands something fails', async () => {
    const commands = rules.filter((rule) => rule.startsWith('+'));
    expect(commands.length).toBeGreaterThan(5);
    const unneeded: string[] = [];
    for (const command of commands) {
      await setUser(rules.filter((rule) => rule !== command));
      if ((await everyAlgorithm()) === undefined) unneeded.push(command);
    }
    expect(unneeded).toEqual([]);
  }, 60_000);

  it('cannot touch keys outside the prefix', async () => {
    await setUser(rules);
    const client = new Redis(`redis://${user}:${password}@127.0.0.1:${server.port}`);
    try {
      await expect(client.get('other:key')).rejects.toThrow(/NOPERM/);
      await expect(client.get('rl:{x}:y')).resolves.toBeNull();
    } finally {
      client.disconnect();
    }
  });
});

describe('Redis over TLS', () => {
  let dir: string;
  let certificate: TestCertificate;
  let tlsPort: number;
  let server: RedisServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redis-tls-'));
    certificate = await createTestCertificate(dir);
    tlsPort = await freePort();
    server = await startRedisServer({
      extraArgs: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        certificate.certFile,
        '--tls-key-file',
        certificate.keyFile,
        '--tls-ca-cert-file',
        certificate.caFile,
        '--tls-auth-clients',
        'no',
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('speaks only TLS on the TLS port', async () => {
    await expect(sendRawCommand(tlsPort, ['PING'], 500)).rejects.toThrow();
  });

  it('decides through tls options, and through a rediss:// client of the user', async () => {
    await expectLimited({ host: '127.0.0.1', port: tlsPort, tls: { ca: certificate.ca } });
    const client = new Redis(`rediss://127.0.0.1:${tlsPort}`, { tls: { ca: certificate.ca } });
    try {
      await once(client, 'ready');
      await expectLimited(client);
    } finally {
      client.disconnect();
    }
  });

  it('warns with the certificate error and serves by the failure mode when the CA is unknown', async () => {
    await expectWarnedFailureMode({ host: '127.0.0.1', port: tlsPort, tls: {} }, /certificate/i);
  }, 30_000);
});
