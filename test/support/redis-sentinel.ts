import { setTimeout as sleep } from 'node:timers/promises';
import { sendRawCommand, startRedisServer, type RedisServer } from './redis-server.js';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 15_000;
export const SENTINEL_MASTER_NAME = 'harness-master';

export interface RedisSentinelHandle {
  /** The master group's name, for ioredis' `name` option. */
  readonly name: string;
  /** For ioredis' `sentinels` option. */
  readonly sentinels: { host: string; port: number }[];
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinelServers: readonly RedisServer[];
  /** The port Sentinel currently names as master (asked of the first sentinel that answers). */
  masterPort(): Promise<number>;
  stop(): Promise<void>;
}

export interface StartRedisSentinelOptions {
  /** How long a master must be silent before it is subjectively down; default 1000 ms. */
  downAfterMs?: number;
}

/** One `key:value` field of an INFO reply. */
function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${READY_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

/**
 * A master, one replica and three `redis-server --sentinel` processes (quorum 2) watching
 * them, all on free ports; resolves once the replica is in sync and every sentinel knows the
 * replica and the two other sentinels, so that killing the master leads to a failover.
 */
export async function startRedisSentinel(
  options: StartRedisSentinelOptions = {},
): Promise<RedisSentinelHandle> {
  const downAfterMs = options.downAfterMs ?? 1_000;
  const started: RedisServer[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((server) => server.stop()));
  };
  try {
    const master = await startRedisServer();
    started.push(master);
    const replica = await startRedisServer({
      extraArgs: ['--replicaof', HOST, String(master.port)],
    });
    started.push(replica);
    await waitFor('replication', async () => {
      const info = await sendRawCommand(replica.port, ['INFO', 'replication']);
      return infoField(info, 'master_link_status') === 'up';
    });
    const config = [
      `sentinel monitor ${SENTINEL_MASTER_NAME} ${HOST} ${master.port} 2`,
      `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${downAfterMs}`,
      `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 10000`,
      `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
      '',
    ].join('\n');
    const sentinelServers = await Promise.all(
      [0, 1, 2].map(() => startRedisServer({ config, extraArgs: ['--sentinel'] })),
    );
    started.push(...sentinelServers);
    for (const sentinel of sentinelServers) {
      await waitFor(`sentinel on port ${sentinel.port}`, async () => {
        const info = await sendRawCommand(sentinel.port, ['INFO', 'sentinel']);
        const status = infoField(info, 'master0') ?? '';
        return (
          status.includes('status=ok') && /slaves=1\b/.test(status) && /sentinels=3\b/.test(status)
        );
      });
    }
    const masterPort = async (): Promise<number> => {
      for (const sentinel of sentinelServers) {
        const info = await sendRawCommand(sentinel.port, ['INFO', 'sentinel']).catch(() => '');
        const address = /address=[\d.]+:(\d+)/.exec(infoField(info, 'master0') ?? '');
        if (address) return Number(address[1]);
      }
      throw new Error('no sentinel answers');
    };
    return {
      name: SENTINEL_MASTER_NAME,
      sentinels: sentinelServers.map((server) => ({ host: HOST, port: server.port })),
      master,
      replica,
      sentinelServers,
      masterPort,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
