import { Logger, type LoggerService } from '@nestjs/common';
import { DeadlineExceededError } from '../../lib/resilience/deadline.js';
import { describeFailure, OutageLog } from '../../lib/resilience/outage-log.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { createRedisClient } from '../../lib/stores/redis/redis-connection.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { type RedisServer, sendRawCommand, startRedisServer } from '../support/redis-server.js';

/** Every line, by level, as Nest's Logger hands them over. */
class Lines implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(`log ${String(message)}`);
  }
  warn(message: unknown): void {
    this.lines.push(`warn ${String(message)}`);
  }
  error(message: unknown): void {
    this.lines.push(`error ${String(message)}`);
  }
}

describe('describeFailure', () => {
  it.each([
    ['NOAUTH Authentication required.', /^NOAUTH: Redis requires a password/],
    ['Redis connection is connect (NOAUTH Authentication required.)', /^NOAUTH: /],
    ['WRONGPASS invalid username-password pair', /^WRONGPASS: the user name or password/],
    ['NOPERM User u has no permissions to run the evalsha command', /^NOPERM: /],
    ["OOM command not allowed when used memory > 'maxmemory'.", /^OOM: Redis is at its maxmemory/],
    ['connect ECONNREFUSED 127.0.0.1:1', /^connection refused/],
    ['Reached the max retries per request limit (which is 0).', /^connection lost/],
    ["Stream isn't writeable and enableOfflineQueue options is false", /^connection lost$/],
    ['Socket closed unexpectedly', /^connection lost/],
    ['BUSY Redis is busy running a script', /^BUSY Redis is busy/],
  ])('says %p in words', (message, words) => {
    expect(describeFailure(new Error(message))).toMatch(words);
  });

  it('never names an option the user did not set', () => {
    expect(
      describeFailure(new Error('Reached the max retries per request limit (which is 0).')),
    ).toBe('connection lost');
    expect(
      describeFailure(new DeadlineExceededError('no answer within 100 ms (store silent)')),
    ).toBe('no answer within 100 ms (store silent)');
  });
});

describe('OutageLog', () => {
  it('warns once when an outage starts, and says how long it lasted and what failed when it ends', () => {
    const logger = new Lines();
    let now = 1_000;
    const log = new OutageLog(logger as unknown as Logger, 'meanwhile', () => now);
    log.answered();
    for (let i = 0; i < 5; i++) log.failed(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    now += 2_500;
    log.answered();
    log.answered();
    log.failed(new Error('OOM command not allowed'));
    now += 100;
    log.answered();
    expect(logger.lines).toEqual([
      'warn Rate limit store unavailable: connection refused: nothing listens at that address (connect ECONNREFUSED 127.0.0.1:1); meanwhile',
      'log Rate limit store answering again after 2.5 s; 5 store calls failed meanwhile',
    ]);
  });

  it('counts the blips of a flapping store without a line each, and reports them with the next outage', () => {
    const logger = new Lines();
    let now = 0;
    const log = new OutageLog(logger as unknown as Logger, 'meanwhile', () => now);
    log.failed(new Error('no answer'));
    log.answered();
    for (let blip = 0; blip < 10; blip++) {
      now += 400;
      log.failed(new Error('no answer'));
      log.failed(new Error('no answer'));
      log.answered();
    }
    now = 5_000;
    log.failed(new Error('no answer'));
    now = 6_000;
    log.answered();
    expect(logger.lines).toEqual([
      'warn Rate limit store unavailable: no answer; meanwhile',
      'log Rate limit store answering again after 0.0 s; 1 store call failed meanwhile',
      'warn Rate limit store unavailable: no answer; meanwhile; 20 store calls failed in brief outages before',
      'log Rate limit store answering again after 1.0 s; 1 store call failed meanwhile',
    ]);
  });
});

/** The limiter's log when Redis starts requiring a password under a running client of the module's. */
describe('the outage log on a real Redis', () => {
  let server: RedisServer;
  const logger = new Lines();
  beforeAll(() => Logger.overrideLogger(logger));
  afterAll(() => Logger.overrideLogger(false));
  beforeEach(async () => {
    server = await startRedisServer();
  });
  afterEach(() => server.stop());

  it('names NOAUTH once, counts the failed calls, and says when it ended', async () => {
    const client = await createRedisClient(server.url, new Logger('test'));
    const store = new RedisStore(client, true);
    const limiter = new RateLimiter(resolveOptions({ timeout: 100, breaker: false }), store);
    const policy: RateLimitPolicy = { limit: 100, window: '1m' };
    try {
      await limiter.consume('client', policy);
      await sendRawCommand(server.port, ['CONFIG', 'SET', 'requirepass', 'secret']);
      // Reconnected without the password now required.
      await sendRawCommand(server.port, ['CLIENT', 'KILL', 'TYPE', 'normal'], 1_000, 'secret');
      logger.lines.length = 0;
      let failed = 0;
      const until = performance.now() + 3_000;
      while (failed < 5 && performance.now() < until) {
        if (
          !(await limiter.consume('client', policy).then(
            () => true,
            () => false,
          ))
        )
          failed++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(failed).toBe(5);
      // The cause in words, once; a lost connection first if a call met the kill itself.
      const warnings = logger.lines.filter((line) => line.startsWith('warn Rate limit store'));
      expect(warnings.length).toBeLessThanOrEqual(2);
      if (warnings.length === 2) {
        expect(warnings[0]).toMatch(/^warn Rate limit store unavailable: connection lost[ ;]/);
      }
      expect(warnings.at(-1)).toMatch(
        /^warn Rate limit store (still )?unavailable( after \d+\.\d s)?: NOAUTH: Redis requires a password/,
      );
      expect(logger.lines.join('\n')).not.toMatch(/max retries per request/);

      await sendRawCommand(server.port, ['CONFIG', 'SET', 'requirepass', ''], 1_000, 'secret');
      const back = performance.now() + 3_000;
      while (
        !(await limiter.consume('client', policy).then(
          () => true,
          () => false,
        ))
      ) {
        if (performance.now() > back) throw new Error('never answered again');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(logger.lines.filter((line) => line.includes('answering again after'))).toEqual([
        expect.stringMatching(
          /^log Rate limit store answering again after \d+\.\d s; \d+ store calls failed meanwhile$/,
        ),
      ]);
    } finally {
      await limiter.onApplicationShutdown();
      await store.close();
    }
  }, 15_000);

  it('times an outage from its first failed store call, the deny cache answering before it', async () => {
    const client = await createRedisClient(server.url, new Logger('test'));
    const store = new RedisStore(client, true);
    const limiter = new RateLimiter(resolveOptions({ timeout: 100, breaker: false }), store);
    const policy: RateLimitPolicy = { limit: 1, window: '1h' };
    const consumed = (key: string) =>
      limiter.consume(key, policy).then(
        (decision) => decision.allowed,
        () => undefined,
      );
    try {
      expect([await consumed('hot'), await consumed('hot')]).toEqual([true, false]);
      await server.kill();
      logger.lines.length = 0;
      // The deny cache answers the denied client without a store call: no outage yet.
      for (let i = 0; i < 10; i++) {
        expect(await consumed('hot')).toBe(false);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(logger.lines).toEqual([]);
      const firstFailure = performance.now();
      expect(await consumed('other')).toBeUndefined();
      expect(logger.lines).toEqual([
        expect.stringMatching(/^warn Rate limit store unavailable: connection (lost|refused)/),
      ]);
      await server.restart();
      const back = performance.now() + 5_000;
      while ((await consumed('other')) === undefined) {
        if (performance.now() > back) throw new Error('never answered again');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const lasted = (performance.now() - firstFailure) / 1_000;
      const [line] = logger.lines.filter((one) => one.includes('answering again after'));
      const logged = Number(/after (\d+\.\d) s/.exec(line)![1]);
      expect(Math.abs(logged - lasted)).toBeLessThan(0.2);
    } finally {
      await limiter.onApplicationShutdown();
      await store.close();
    }
  }, 15_000);
});
