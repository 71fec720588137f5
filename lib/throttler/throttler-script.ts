import { createHash } from 'node:crypto';
import { isNoScript, type RedisClientPort } from '../stores/redis/clients/redis-client-port.js';
import { LUA_SOURCES } from '../stores/redis/lua-sources.generated.js';

const LUA = LUA_SOURCES['throttler-increment'];
const SHA = createHash('sha1').update(LUA).digest('hex');

/** The reply of lua/throttler-increment.lua: totalHits, timeToExpire, isBlocked, timeToBlockExpire. */
export type IncrementReply = [number, number, number, number];

/**
 * Every Redis call the throttler storage makes: lua/throttler-increment.lua by EVALSHA, and
 * by EVAL when the server lacks it (first use, a restart, a failover, SCRIPT FLUSH), which
 * also caches it there. A client that is not connected is not sent anything: the storage's
 * failure mode applies at once, and no command is queued to charge a hit after the answer.
 */
export async function sendIncrement(
  client: RedisClientPort,
  keys: readonly [string, string],
  args: readonly string[],
): Promise<IncrementReply> {
  if (!client.isReady()) throw new Error(`Redis connection is ${client.state()}`);
  try {
    return (await client.script('evalsha', [SHA, 2, ...keys, ...args])) as IncrementReply;
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return (await client.script('eval', [LUA, 2, ...keys, ...args])) as IncrementReply;
  }
}
