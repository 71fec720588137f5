import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CLUSTER_BUS_PORT_OFFSET, freeClusterPort } from './free-port.js';
import {
  REDIS_CLI_BIN,
  sendRawCommand,
  startRedisServer,
  type RedisServer,
} from './redis-server.js';

const execFileAsync = promisify(execFile);
const HOST = '127.0.0.1';
const SLOT_COUNT = 16_384;
const READY_TIMEOUT_MS = 10_000;

export interface RedisClusterHandle {
  /** The masters, in the order their slot ranges were assigned. */
  readonly nodes: { host: string; port: number }[];
  /** The processes behind `nodes`, e.g. to kill or pause one master. */
  readonly servers: readonly RedisServer[];
  stop(): Promise<void>;
}

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

async function clusterIsReady(port: number, masters: number): Promise<boolean> {
  try {
    const info = parseInfo(await sendRawCommand(port, ['CLUSTER', 'INFO']));
    return (
      info.get('cluster_state') === 'ok' &&
      info.get('cluster_slots_assigned') === String(SLOT_COUNT) &&
      info.get('cluster_known_nodes') === String(masters)
    );
  } catch {
    return false;
  }
}

/**
 * Starts `masters` cluster-enabled redis-server processes (no replicas), joins them with
 * `redis-cli --cluster create`, and resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(masters = 3): Promise<RedisClusterHandle> {
  if (!Number.isInteger(masters) || masters < 3) {
    // redis-cli --cluster create refuses fewer than 3 masters.
    throw new Error(`A Redis Cluster needs at least 3 masters, got ${masters}`);
  }
  const reserved = new Set<number>();
  const pickPort = async (): Promise<number> => {
    const port = await freeClusterPort(reserved);
    reserved.add(port);
    reserved.add(port + CLUSTER_BUS_PORT_OFFSET);
    return port;
  };
  const clusterArgs = [
    '--cluster-enabled',
    'yes',
    // Relative to --dir, which is private to each server.
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    '2000',
  ];

  const started = await Promise.allSettled(
    Array.from({ length: masters }, () =>
      startRedisServer({ port: pickPort, extraArgs: clusterArgs }),
    ),
  );
  const servers = started.flatMap((result) =>
    result.status === 'fulfilled' ? [result.value] : [],
  );
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((server) => server.stop()));
  };

  try {
    const failure = started.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;

    await execFileAsync(REDIS_CLI_BIN, [
      '--cluster',
      'create',
      ...servers.map((server) => `${HOST}:${server.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]).catch((error: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(
        `redis-cli --cluster create failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
      );
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const ready = await Promise.all(servers.map((s) => clusterIsReady(s.port, masters)));
      if (ready.every(Boolean)) break;
      if (Date.now() > deadline) {
        const states = await Promise.all(
          servers.map((s) =>
            sendRawCommand(s.port, ['CLUSTER', 'INFO']).catch((error: Error) => error.message),
          ),
        );
        throw new Error(
          `Redis Cluster not ready within ${READY_TIMEOUT_MS} ms:\n` +
            servers.map((s, i) => `--- ${s.port}\n${states[i]}`).join('\n'),
        );
      }
      await sleep(20);
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes: servers.map((server) => ({ host: HOST, port: server.port })),
    servers,
    stop,
  };
}
