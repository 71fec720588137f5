import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CLUSTER_BUS_PORT_OFFSET, freeClusterPort } from './free-port.js';
import { sendRawCommand, startRedisServer, type RedisServer } from './redis-server.js';
import { binariesOf, type ServerKind } from './server-kinds.js';

const execFileAsync = promisify(execFile);
const HOST = '127.0.0.1';
const SLOT_COUNT = 16_384;
const READY_TIMEOUT_MS = 10_000;

export interface StartRedisClusterOptions {
  /** redis-server nodes joined by redis-cli (the default), or valkey-server by valkey-cli. */
  readonly server?: ServerKind;
  /** More arguments for every node, e.g. `--rename-command EVAL ''`. */
  readonly extraArgs?: readonly string[];
  /** Replicas per master: 0 (the default) or 1. */
  readonly replicas?: 0 | 1;
  /**
   * `cluster-node-timeout` in ms (default 2000): how long a master may be unreachable before
   * it is failed, and its replica promoted. Settable later with `CONFIG SET`.
   */
  readonly nodeTimeoutMs?: number;
}

export interface RedisClusterHandle {
  /** The masters, in the order their slot ranges were assigned. */
  readonly nodes: { host: string; port: number }[];
  /** The processes behind `nodes`, e.g. to kill or pause one master. */
  readonly servers: readonly RedisServer[];
  /** With `replicas: 1`, `replicas[i]` replicates `servers[i]`; else empty. */
  readonly replicas: readonly RedisServer[];
  /** The port of the node that serves `slot` now, as `server` sees the slot map. */
  ownerOf(slot: number, server?: RedisServer): Promise<number>;
  /**
   * Resolves once `replica` is a master that serves slots and the cluster is `ok` again as
   * it sees it, with the epoch ms at which this was first seen (polled every 20 ms).
   */
  waitForPromotion(replica: RedisServer, timeoutMs: number): Promise<number>;
  stop(): Promise<void>;
}

/** One line of CLUSTER NODES: a node's id, port, flags, master's id and slot ranges. */
interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly masterId: string;
  readonly slots: readonly [number, number][];
}

function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.trim().split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        flags: flags.split(','),
        masterId,
        // Importing or migrating slots show as [from->-to]: not served yet.
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return [from, to] as [number, number];
          }),
      };
    });
}

const clusterNodes = async (port: number): Promise<ClusterNode[]> =>
  parseClusterNodes(await sendRawCommand(port, ['CLUSTER', 'NODES']));

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

async function clusterIsReady(port: number, nodes: number): Promise<boolean> {
  try {
    const info = parseInfo(await sendRawCommand(port, ['CLUSTER', 'INFO']));
    return (
      info.get('cluster_state') === 'ok' &&
      info.get('cluster_slots_assigned') === String(SLOT_COUNT) &&
      info.get('cluster_known_nodes') === String(nodes)
    );
  } catch {
    return false;
  }
}

/** Whether `replica` streams from its master, as both of them see it. */
async function replicationIsUp(master: RedisServer, replica: RedisServer): Promise<boolean> {
  try {
    const [ofMaster, ofReplica] = await Promise.all(
      [master, replica].map(async ({ port }) =>
        parseInfo(await sendRawCommand(port, ['INFO', 'replication'])),
      ),
    );
    return (
      ofReplica.get('master_link_status') === 'up' &&
      ofReplica.get('master_port') === String(master.port) &&
      /state=online/.test(ofMaster.get('slave0') ?? '')
    );
  } catch {
    return false;
  }
}

/** Polls `condition` every 20 ms until it holds; throws `describe()` after `timeoutMs`. */
async function until(
  condition: () => Promise<boolean>,
  timeoutMs: number,
  describe: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(await describe());
    await sleep(20);
  }
}

/**
 * Starts `masters` cluster-enabled redis-server (or valkey-server) processes, joins them with
 * `redis-cli --cluster create` (valkey-cli), and with `replicas: 1` gives each master a replica of its own
 * (CLUSTER MEET, then CLUSTER REPLICATE), so which replica takes over which master is known.
 * Resolves once every node reports `cluster_state:ok` and every replica is in sync.
 */
export async function startRedisCluster(
  masters = 3,
  {
    server = 'redis',
    extraArgs = [],
    replicas = 0,
    nodeTimeoutMs = 2_000,
  }: StartRedisClusterOptions = {},
): Promise<RedisClusterHandle> {
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
    String(nodeTimeoutMs),
    ...extraArgs,
  ];

  const nodeCount = masters * (1 + replicas);
  const started = await Promise.allSettled(
    Array.from({ length: nodeCount }, () =>
      startRedisServer({ server, port: pickPort, extraArgs: clusterArgs }),
    ),
  );
  const everyServer = started.flatMap((result) =>
    result.status === 'fulfilled' ? [result.value] : [],
  );
  const servers = everyServer.slice(0, masters);
  const replicaServers = everyServer.slice(masters);
  const stop = async (): Promise<void> => {
    await Promise.all(everyServer.map((server) => server.stop()));
  };

  try {
    const failure = started.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;

    const { cli } = binariesOf(server);
    await execFileAsync(cli, [
      '--cluster',
      'create',
      ...servers.map((server) => `${HOST}:${server.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]).catch((error: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(
        `${cli} --cluster create failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
      );
    });

    const clusterStates = async (): Promise<string> => {
      const states = await Promise.all(
        everyServer.map((s) =>
          sendRawCommand(s.port, ['CLUSTER', 'INFO']).catch((error: Error) => error.message),
        ),
      );
      return (
        `Redis Cluster not ready within ${READY_TIMEOUT_MS} ms:\n` +
        everyServer.map((s, i) => `--- ${s.port}\n${states[i]}`).join('\n')
      );
    };
    await until(
      async () =>
        (await Promise.all(servers.map((s) => clusterIsReady(s.port, masters)))).every(Boolean),
      READY_TIMEOUT_MS,
      clusterStates,
    );
    if (replicaServers.length > 0) {
      const masterIds = await Promise.all(
        servers.map((s) => sendRawCommand(s.port, ['CLUSTER', 'MYID'])),
      );
      await Promise.all(
        replicaServers.map(async (replica, i) => {
          await sendRawCommand(replica.port, ['CLUSTER', 'MEET', HOST, String(servers[i].port)]);
          // REPLICATE names a node the replica must know already: wait for the handshake.
          await until(
            async () =>
              (await clusterNodes(replica.port)).some(
                (node) => node.id === masterIds[i] && node.flags.includes('master'),
              ),
            READY_TIMEOUT_MS,
            async () => `replica ${replica.port} never learnt master ${servers[i].port}`,
          );
          await sendRawCommand(replica.port, ['CLUSTER', 'REPLICATE', masterIds[i]]);
        }),
      );
      await until(
        async () =>
          (
            await Promise.all([
              ...everyServer.map((s) => clusterIsReady(s.port, nodeCount)),
              ...replicaServers.map((replica, i) => replicationIsUp(servers[i], replica)),
            ])
          ).every(Boolean),
        READY_TIMEOUT_MS,
        clusterStates,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }

  const ownerOf = async (slot: number, server = servers[0]): Promise<number> => {
    const owner = (await clusterNodes(server.port)).find(
      (node) =>
        node.flags.includes('master') &&
        !node.flags.includes('fail') &&
        node.slots.some(([from, to]) => from <= slot && slot <= to),
    );
    if (!owner) throw new Error(`no master serves slot ${slot} as port ${server.port} sees it`);
    return owner.port;
  };
  const waitForPromotion = async (replica: RedisServer, timeoutMs: number): Promise<number> => {
    const promoted = async (): Promise<boolean> => {
      try {
        const [myself] = (await clusterNodes(replica.port)).filter((node) =>
          node.flags.includes('myself'),
        );
        const info = parseInfo(await sendRawCommand(replica.port, ['CLUSTER', 'INFO']));
        return (
          myself.flags.includes('master') &&
          myself.slots.length > 0 &&
          info.get('cluster_state') === 'ok'
        );
      } catch {
        return false;
      }
    };
    await until(promoted, timeoutMs, async () => {
      const nodes = await sendRawCommand(replica.port, ['CLUSTER', 'NODES']).catch(String);
      return `replica ${replica.port} not promoted within ${timeoutMs} ms:\n${nodes}`;
    });
    return Date.now();
  };

  return {
    nodes: servers.map((server) => ({ host: HOST, port: server.port })),
    servers,
    replicas: replicaServers,
    ownerOf,
    waitForPromotion,
    stop,
  };
}
