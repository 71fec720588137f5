/**
 * What the Redis store needs of a client, whichever library made it (clients/*-port.ts):
 * the store decides, loads scripts and reads the clock through this alone.
 */
export interface RedisClientPort {
  /** Redis Cluster: a script may only touch keys of one slot. */
  readonly isCluster: boolean;
  /**
   * Whether a command goes out now. Otherwise the store refuses at once: a client would
   * hold it for its own retries or in its offline queue, past any deadline.
   */
  isReady(): boolean;
  /** The connection's state in a word ('connecting', 'closed', ...), for a refusal. */
  state(): string;
  /** Closed for good: it will never be ready again. */
  hasEnded(): boolean;
  /**
   * EVALSHA or EVAL with [sha or script, key count, ...keys, ...arguments], with the
   * client's key prefix on the keys, string replies, and on a Cluster sent to the first
   * key's slot. The caller may reuse `args` once this returns. A function of its own (no
   * `this`): the store keeps it and calls it on every decision.
   */
  readonly script: (
    name: 'eval' | 'evalsha',
    args: readonly (string | number)[],
  ) => Promise<unknown>;
  /** DEL of keys in one slot. */
  del(keys: readonly string[]): Promise<unknown>;
  /** On a Cluster, the master (host:port) its slot map sends `slot` to; else undefined. */
  masterOf(slot: number): string | undefined;
  /** Redis TIME in whole ms, of the server or of each Cluster master. */
  masterTimes(): Promise<number[]>;
  /**
   * Redis TIME in whole ms of the Cluster master at `node` (host:port, as masterOf names
   * it), on the connection its slots' commands take; of the server on a single Redis.
   */
  masterTime(node: string): Promise<number>;
  /** Calls `listener` whenever a connection (to any node) becomes ready; returns the undo. */
  onReady(listener: () => void): () => void;
  /** Calls `listener` with each error the client reports; returns the undo. */
  onError(listener: (error: Error) => void): () => void;
  /** Starts a client made not to connect until told (ioredis' lazyConnect). */
  connectIfLazy(): void;
  /** Where decisions go, for the start log: host and port or masters, never credentials. */
  describe(): string;
  /** Closes the client: for one the module created, never for one the app owns. */
  close(): Promise<void>;
}

/**
 * Whether a script call failed for want of its script on the server (a restart, a failover,
 * SCRIPT FLUSH): Redis's NOSCRIPT error, as ioredis and node-redis pass it on, or as Valkey
 * GLIDE words it ("An error was signalled by the server: - NoScriptError: No matching
 * script."). Read only on a failure: the calls that succeed pay nothing for it.
 */
export const isNoScript = (error: unknown): boolean =>
  error instanceof Error &&
  (error.message.startsWith('NOSCRIPT') || error.message.includes('- NoScriptError:'));

/** TIME's reply, seconds and microseconds, in whole ms. */
export const timeMs = ([seconds, micros]: readonly unknown[]): number =>
  Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
