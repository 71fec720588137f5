import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { RedisThrottlerStorage } from '../../lib/throttler/index.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * docs/security.md's least ACL line, plus what it adds for RedisThrottlerStorage, is enough for
 * every path of its script, and each of those additions is needed. The storage fails closed
 * here, so a refused command shows as an error instead of passing as an admission.
 */
const SECURITY_DOC = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
const acl = /^ACL SETUSER (\S+) (.*)$/m.exec(SECURITY_DOC);
const user = acl?.[1] ?? '';
const rules = acl?.[2].split(' ') ?? [];
const password = rules.find((rule) => rule.startsWith('>'))?.slice(1) ?? '';
const added = /for it, add `([^`]+)`/.exec(SECURITY_DOC)?.[1].split(' ') ?? [];

const redis = useRedisServer();

/** Every path: counting, a refusal without block (oldest hit), a block, its end. Rejects on the first failure. */
async function everyPath(): Promise<void> {
  const client = new Redis(`redis://${user}:${password}@127.0.0.1:${redis.server.port}`);
  client.on('error', () => undefined);
  const storage = new RedisThrottlerStorage(client, { failureMode: 'closed', timeout: 1_000 });
  try {
    await storage.onModuleInit();
    for (let i = 0; i < 3; i++) await storage.increment('plain', 60_000, 2, 0, 'default');
    for (let i = 0; i < 3; i++) await storage.increment('block', 60_000, 2, 50, 'default');
    await new Promise((resolve) => setTimeout(resolve, 60));
    await storage.increment('block', 60_000, 2, 50, 'default');
  } finally {
    client.disconnect();
  }
}

const setUser = (ruleList: readonly string[]) =>
  redis.admin.acl('SETUSER', user, 'reset', ...ruleList);

describe("RedisThrottlerStorage with docs/security.md's least ACL", () => {
  it('is in docs/security.md', () => {
    expect(user).not.toBe('');
    expect(added).toEqual(['+hgetall', '+hset', '+zcard']);
  });

  it('works with the line and its additions', async () => {
    await setUser([...rules, ...added]);
    await redis.admin.flushall();
    await expect(everyPath()).resolves.toBeUndefined();
  });

  it.each(added)('fails without %s', async (command) => {
    await setUser([...rules, ...added.filter((rule) => rule !== command)]);
    await redis.admin.flushall();
    // Refused by Redis's ACL (NOPERM, or inside the script "can't run this command"), itself
    // or as the cause of the storage's 503.
    const error = await everyPath().then(
      () => undefined,
      (failure: Error) => failure,
    );
    expect(String((error?.cause as Error | undefined)?.message ?? error?.message)).toMatch(
      /NOPERM|can't run this command/,
    );
  });
});
