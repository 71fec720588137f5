import type { Cluster, Redis } from 'ioredis';
import type {
  GlideLikeClient,
  IoredisLikeClient,
  NodeRedisLikeCluster,
  RedisClientLike,
} from '../../../interfaces/redis-client.interface.js';
import { RateLimitConfigError } from '../../../config/rate-limit-config.error.js';
import { type GlideClient, GlidePort } from './glide-port.js';
import { IoredisPort } from './ioredis-port.js';
import { type NodeRedisCluster, NodeRedisClusterPort } from './node-redis-cluster-port.js';
import { type NodeRedisClient, NodeRedisPort } from './node-redis-port.js';
import type { RedisClientPort } from './redis-client-port.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/** ioredis and iovalkey: `defineCommand` is theirs alone. */
const isIoredisLike = (value: Record<string, unknown>): boolean =>
  typeof value.defineCommand === 'function' && typeof value.sendCommand === 'function';

/** node-redis, client or Cluster: its connection state as two booleans. */
const isNodeRedisLike = (value: Record<string, unknown>): boolean =>
  typeof value.sendCommand === 'function' &&
  typeof value.isReady === 'boolean' &&
  typeof value.isOpen === 'boolean';

/** Valkey GLIDE, client or Cluster: `customCommand` and `invokeScript` are its own. */
const isGlide = (value: Record<string, unknown>): boolean =>
  typeof value.customCommand === 'function' && typeof value.invokeScript === 'function';

/** Of GLIDE's two clients, only `GlideClusterClient` routes a script itself. */
const isGlideCluster = (value: Record<string, unknown>): boolean =>
  typeof value.invokeScriptWithRoute === 'function';

const isNodeRedisCluster = (value: Record<string, unknown>): boolean =>
  typeof value.nodeClient === 'function' && Array.isArray(value.masters);

/** A client the app made (any supported library), told apart from a URL or options. */
export function isRedisClient(value: unknown): value is RedisClientLike {
  return isObject(value) && (isIoredisLike(value) || isNodeRedisLike(value) || isGlide(value));
}

/** One port per client: the store and the start-up wait share its listeners and socket. */
const ports = new WeakMap<RedisClientLike, RedisClientPort>();

/** node-redis' `createSentinel()`: its `sendCommand` takes (isReadonly, args), unlike a client's. */
const isNodeRedisSentinel = (value: Record<string, unknown>): boolean =>
  typeof value.getMasterNode === 'function' && typeof value.getSentinelNode === 'function';

/** The adapter for a client of whichever library made it. */
export function clientPortOf(client: RedisClientLike): RedisClientPort {
  let port = ports.get(client);
  if (port) return port;
  const value = client as unknown as Record<string, unknown>;
  if (isNodeRedisSentinel(value)) {
    throw new RateLimitConfigError(
      'Invalid RateLimitModule option redis: a node-redis Sentinel (createSentinel()) is not ' +
        'supported; give an ioredis client with sentinels, or a node-redis client of the master',
    );
  }
  if (isIoredisLike(value)) port = new IoredisPort(client as IoredisLikeClient as Redis | Cluster);
  else if (isGlide(value))
    port = new GlidePort(
      client as GlideLikeClient as unknown as GlideClient,
      isGlideCluster(value),
    );
  else if (isNodeRedisCluster(value))
    port = new NodeRedisClusterPort(client as NodeRedisLikeCluster as unknown as NodeRedisCluster);
  else port = new NodeRedisPort(client as unknown as NodeRedisClient);
  ports.set(client, port);
  return port;
}
