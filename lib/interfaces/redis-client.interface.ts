/**
 * The Redis clients the `redis` option takes, by the shape the package uses of each, not by
 * the client libraries' own types: every client is an optional peer, and these compile in
 * an app that installed only one of them (or none).
 */

/** A function of any signature: what is called on a client is checked where it is called. */
type AnyFunction = (...args: never[]) => unknown;

/**
 * An ioredis (5 or 6) or iovalkey client: `Redis`, `Valkey` or `Cluster`. Told apart from
 * the others by `defineCommand`.
 */
export interface IoredisLikeClient {
  readonly status: string;
  readonly isCluster: boolean;
  defineCommand: AnyFunction;
  sendCommand: AnyFunction;
}

/** A node-redis (`redis` 5 or 6) client from `createClient()`. */
export interface NodeRedisLikeClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand: AnyFunction;
}

/** A node-redis (`redis` 5 or 6) Redis Cluster client from `createCluster()`. */
export interface NodeRedisLikeCluster {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly masters: readonly unknown[];
  nodeClient: AnyFunction;
  sendCommand: AnyFunction;
}

/** A Valkey GLIDE (`@valkey/valkey-glide` 2.x) `GlideClient` or `GlideClusterClient`. */
export interface GlideLikeClient {
  customCommand: AnyFunction;
  invokeScript: AnyFunction;
}

/** A client the app made and owns: the module never closes it. */
export type RedisClientLike =
  IoredisLikeClient | NodeRedisLikeClient | NodeRedisLikeCluster | GlideLikeClient;

/** The ioredis options the package reads itself; any other ioredis option passes through. */
interface KnownRedisOptions {
  host?: string;
  port?: number;
  path?: string;
  username?: string;
  password?: string;
  db?: number;
  keyPrefix?: string;
  name?: string;
  lazyConnect?: boolean;
  retryStrategy?: (times: number) => number | void | null;
}

/**
 * ioredis `RedisOptions`, from which the module creates (and later closes) an ioredis client:
 * the fields it reads typed, the rest as ioredis defines them.
 */
export type RedisConnectionOptions =
  KnownRedisOptions | (KnownRedisOptions & { readonly [option: string]: unknown });
