import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import * as ioredis6 from 'ioredis';
import * as ioredis5 from 'ioredis5';
import * as iovalkey from 'iovalkey';
import * as nodeRedis6 from 'redis';
import * as nodeRedis5 from 'redis5';
import type { RedisClientLike } from '../../lib/interfaces/redis-client.interface.js';
import { clientPortOf } from '../../lib/stores/redis/clients/client-port.js';
import type { ServerKind } from './server-kinds.js';

/**
 * Every client library the package supports, as an app makes its client: the library's
 * own defaults (retries, offline queue), nothing set for the limiter's sake.
 */
export const REDIS_CLIENTS = [
  'ioredis 6',
  'ioredis 5',
  'iovalkey',
  'node-redis 6',
  'node-redis 5',
  'Valkey GLIDE',
] as const;
export type RedisClientName = (typeof REDIS_CLIENTS)[number];

/** The Cluster clients: ioredis' and iovalkey's `Cluster`, node-redis' `createCluster()`, GLIDE's. */
export const CLUSTER_CLIENTS = [
  'ioredis Cluster',
  'iovalkey Cluster',
  'node-redis 6 Cluster',
  'Valkey GLIDE Cluster',
] as const;
export type ClusterClientName = (typeof CLUSTER_CLIENTS)[number];

/**
 * The clients the store suites go through on each server: every library on Redis; on Valkey,
 * ioredis and iovalkey (Valkey's own fork of it), the clients apps moving to Valkey use, so
 * that each listed behaviour is held once per client and topology there without running the
 * whole matrix twice.
 */
export const CLIENTS_ON: Record<ServerKind, readonly RedisClientName[]> = {
  redis: REDIS_CLIENTS,
  valkey: ['ioredis 6', 'iovalkey'],
};
export const CLUSTER_CLIENTS_ON: Record<ServerKind, readonly ClusterClientName[]> = {
  redis: ['ioredis Cluster', 'node-redis 6 Cluster', 'Valkey GLIDE Cluster'],
  valkey: ['ioredis Cluster', 'iovalkey Cluster'],
};

/** GLIDE's default `requestTimeout`: a command not answered by then fails (TimeoutError). */
export const GLIDE_REQUEST_TIMEOUT_MS = 250;

/** What a test does with a client of any library besides handing it to the package. */
export interface ClientUnderTest {
  readonly client: RedisClientLike;
  /** Resolves once it takes commands. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

const IOREDIS: Record<'ioredis 6' | 'ioredis 5' | 'iovalkey', typeof ioredis6.Redis> = {
  'ioredis 6': ioredis6.Redis,
  'ioredis 5': ioredis5.Redis as unknown as typeof ioredis6.Redis,
  iovalkey: iovalkey.Redis as unknown as typeof ioredis6.Redis,
};

/** ioredis-style options each library spells its own way. */
export interface ClientOptions {
  keyPrefix?: string;
}

/**
 * A client of `name` on `url`, connecting. A node-redis client connects when told, as an
 * app would before handing it over; each gets an error listener, as node-redis requires of
 * an app (without one an error event kills the process). A GLIDE client is made connected
 * (its `createClient` resolves once it is), with GLIDE's defaults: a 250 ms request
 * timeout, 1,000 requests in flight.
 */
export async function clientOf(
  name: RedisClientName,
  url: string,
  options: ClientOptions = {},
): Promise<ClientUnderTest> {
  if (name === 'Valkey GLIDE') {
    const { hostname: host, port } = new URL(url);
    const client = await GlideClient.createClient({ addresses: [{ host, port: Number(port) }] });
    return wrap(client, async () => client.close());
  }
  if (name in IOREDIS) {
    const client = new IOREDIS[name as keyof typeof IOREDIS](url, options);
    client.on('error', () => undefined);
    return wrap(client, async () => client.disconnect());
  }
  // The two majors' types differ in detail; an app has one of them.
  const createClient = (
    name === 'node-redis 6' ? nodeRedis6.createClient : nodeRedis5.createClient
  ) as typeof nodeRedis6.createClient;
  const client = createClient({ url, ...options });
  client.on('error', () => undefined);
  const connecting = client.connect().catch(() => undefined);
  return wrap(client as unknown as RedisClientLike, async () => {
    await connecting;
    client.destroy();
  });
}

/** A Cluster client of `name` on the given masters, connecting. */
export async function clusterClientOf(
  name: ClusterClientName,
  nodes: readonly { host: string; port: number }[],
): Promise<ClientUnderTest> {
  if (name === 'Valkey GLIDE Cluster') {
    const client = await GlideClusterClient.createClient({ addresses: [...nodes] });
    return wrap(client, async () => client.close());
  }
  if (name !== 'node-redis 6 Cluster') {
    const Cluster =
      name === 'ioredis Cluster'
        ? ioredis6.Cluster
        : (iovalkey.Cluster as unknown as typeof ioredis6.Cluster);
    const client = new Cluster([...nodes]);
    client.on('error', () => undefined);
    return wrap(client, async () => client.disconnect());
  }
  const cluster = nodeRedis6.createCluster({
    rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
  });
  cluster.on('error', () => undefined);
  const connecting = cluster.connect().catch(() => undefined);
  return wrap(cluster as unknown as RedisClientLike, async () => {
    await connecting;
    cluster.destroy();
  });
}

function wrap(client: RedisClientLike, close: () => Promise<void>): ClientUnderTest {
  return { client, ready: () => untilReady(client), close };
}

/** Resolves once `client` takes commands (of any library, through the package's own port). */
export function untilReady(client: RedisClientLike): Promise<void> {
  const port = clientPortOf(client);
  return new Promise((resolve) => {
    if (port.isReady()) return resolve();
    const off = port.onReady(() => {
      if (!port.isReady()) return;
      off();
      resolve();
    });
  });
}
