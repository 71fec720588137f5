import { jest } from '@jest/globals';
import { Controller, Get } from '@nestjs/common';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import {
  ALGORITHMS,
  RateLimit,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { freePort } from '../support/free-port.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import { LimiterFixture } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import {
  type RedisServer,
  sendRawCommand,
  startRedisServer,
  untilWindowHasRoom,
} from '../support/redis-server.js';
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
  const redis = useRedisServer({ password: PASSWORD });

  it('decides with the password in the URL or in the options', async () => {
    const admin = new Redis({ port: redis.server.port, password: PASSWORD });
    try {
      // Both apps' requests in one window of an hour on Redis's clock.
      await untilWindowHasRoom(admin, 3_600_000, 10_000);
      await expectLimited(`redis://:${PASSWORD}@127.0.0.1:${redis.server.port}`);
      await expectLimited({ host: '127.0.0.1', port: redis.server.port, password: PASSWORD });
    } finally {
      admin.disconnect();
    }
  });

  it('warns at start-up with the cause, then serves by the failure mode, for a wrong password', async () => {
    await expectWarnedFailureMode(`redis://:wrong@127.0.0.1:${redis.server.port}`, /WRONGPASS/);
  }, 30_000);

  it('warns the same way when the password is missing', async () => {
    await expectWarnedFailureMode(redis.server.url, /NOAUTH|Authentication required/i);
  }, 30_000);

  it('warns the same way for a client of the user with a wrong password, and leaves it to its owner', async () => {
    // ioredis' defaults: an offline queue and 20 retries per command, which must not hang a request.
    const client = new Redis(`redis://:wrong@127.0.0.1:${redis.server.port}`);
    const unhandled = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      await expectWarnedFailureMode(client, /WRONGPASS/);
      // No listener of the module is left on the user's client.
      expect(client.listenerCount('error')).toBe(0);
      expect(client.listenerCount('ready')).toBe(0);
      expect(client.status).not.toBe('end');
    } finally {
      unhandled.mockRestore();
      client.disconnect();
    }
  }, 30_000);
});

const SECURITY_DOC = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
const readmeAcl = /^ACL SETUSER (\S+) (.*)$/m.exec(SECURITY_DOC);
const user = readmeAcl?.[1] ?? '';
const rules = readmeAcl?.[2].split(' ') ?? [];
const password = rules.find((rule) => rule.startsWith('>'))?.slice(1) ?? '';
/** What docs/security.md adds to the line for a Redis Cluster. */
const clusterRules = /On a Redis Cluster, add `([^`]+)`/.exec(SECURITY_DOC)?.[1].split(' ') ?? [];

/** A limiter, and how to close it, on a client that logs in as the documented user. */
interface AclLimiter {
  readonly limiter: RateLimiter;
  /** Where the harness reads Redis's clock, as the default user (the documented one may lack TIME). */
  readonly clock: Redis | RedisServer;
  /** Resolves once its client is ready, or does not within a second. */
  readonly ready: Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Every algorithm through the service: charges up to a denial, a peek, a reset and a charge
 * again, so every command the scripts can call runs. Resolves to the first failure, if any;
 * a warning from the client (e.g. a skipped ready check) counts as one.
 */
let runs = 0;
async function everyAlgorithm(connect: () => AclLimiter): Promise<unknown> {
  const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  const { limiter, clock, ready, close } = connect();
  try {
    await Promise.race([ready, sleep(1_000, undefined, { ref: false })]);
    // The fixed window's three charges in one minute of Redis's clock: in a new one the third
    // would be admitted. Five algorithms' few commands take well under 3 s.
    await untilWindowHasRoom(clock, 60_000, 3_000);
    for (const algorithm of ALGORITHMS) {
      const policy = { name: 'acl', algorithm, limit: 1, window: '1m' };
      const key = `acl-${algorithm}-${++runs}`;
      // The leaky bucket admits a second request at once, to wait its turn; not a third.
      const charges = [];
      for (let i = 0; i < 3; i++) charges.push(await limiter.consume(key, policy));
      const peek = await limiter.peek(key, policy);
      await limiter.reset(key, policy);
      const again = await limiter.consume(key, policy);
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
    await close();
  }
}

/** The commands of `ruleList` without which everyAlgorithm still passes: none, if minimal. */
async function unneededCommands(
  ruleList: readonly string[],
  setUser: (ruleList: readonly string[]) => Promise<unknown>,
  connect: () => AclLimiter,
): Promise<string[]> {
  const unneeded: string[] = [];
  for (const command of ruleList.filter((rule) => rule.startsWith('+'))) {
    await setUser(ruleList.filter((rule) => rule !== command));
    if ((await everyAlgorithm(connect)) === undefined) unneeded.push(command);
  }
  return unneeded;
}

describe('an ACL user with only the permissions docs/security.md lists', () => {
  const redis = useRedisServer({ password: PASSWORD });
  const setUser = (ruleList: readonly string[]) =>
    sendRawCommand(
      redis.server.port,
      ['ACL', 'SETUSER', user, 'reset', ...ruleList],
      1_000,
      PASSWORD,
    );
  const connect = (): AclLimiter => {
    const fixture = new LimiterFixture(
      'redis',
      `redis://${user}:${password}@127.0.0.1:${redis.server.port}`,
    );
    fixture.client!.on('error', () => undefined);
    return {
      limiter: fixture.limiter,
      clock: redis.admin,
      ready: fixture.ready(),
      close: () => fixture.close(),
    };
  };

  it('is in docs/security.md', () => {
    expect(user).not.toBe('');
    expect(rules).toContain('~rl:*');
    expect(password).not.toBe('');
  });

  it('runs every algorithm, reset included', async () => {
    await setUser(rules);
    expect(await everyAlgorithm(connect)).toBeUndefined();
  });

  it('is minimal: without any one of its commands something fails', async () => {
    expect(rules.filter((rule) => rule.startsWith('+')).length).toBeGreaterThan(5);
    expect(await unneededCommands(rules, setUser, connect)).toEqual([]);
  }, 60_000);

  it('cannot touch keys outside the prefix', async () => {
    await setUser(rules);
    const client = new Redis(`redis://${user}:${password}@127.0.0.1:${redis.server.port}`);
    try {
      await expect(client.get('other:key')).rejects.toThrow(/NOPERM/);
      await expect(client.get('rl:{x}:y')).resolves.toBeNull();
    } finally {
      client.disconnect();
    }
  });
});

describe('an ACL user on a Redis Cluster with the permissions docs/security.md lists', () => {
  let cluster: RedisClusterHandle;
  const setUser = (ruleList: readonly string[]) =>
    Promise.all(
      cluster.servers.map((server) =>
        sendRawCommand(server.port, ['ACL', 'SETUSER', user, 'reset', ...ruleList]),
      ),
    );
  const connect = (): AclLimiter => {
    const client = new Cluster(cluster.nodes, { redisOptions: { username: user, password } });
    client.on('error', () => undefined);
    client.on('node error', () => undefined);
    return {
      limiter: new RateLimiter(resolveOptions({}), new RedisStore(client, true)),
      clock: cluster.servers[0],
      ready: once(client, 'ready'),
      close: async () => client.disconnect(),
    };
  };

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  }, 60_000);
  afterAll(() => cluster?.stop());

  it('runs every algorithm with the Cluster additions, each of them needed', async () => {
    expect(clusterRules.length).toBeGreaterThan(0);
    await setUser([...rules, ...clusterRules]);
    expect(await everyAlgorithm(connect)).toBeUndefined();
    const withCluster = (ruleList: readonly string[]) => setUser([...rules, ...ruleList]);
    expect(await unneededCommands(clusterRules, withCluster, connect)).toEqual([]);
  }, 60_000);
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
    // Both apps' requests in one window of an hour on Redis's clock (read on the plain port).
    await untilWindowHasRoom(server, 3_600_000, 10_000);
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
