import { type RedisClientPort, timeMs } from './redis-client-port.js';
import {
  type Emitter,
  listen,
  STORE_COMMAND_OPTIONS,
  prefixed,
  type RedisArgument,
  scriptCommand,
  stateOf,
} from './node-redis-commands.js';
import type { NodeRedisClient } from './node-redis-port.js';

/** A master as node-redis' Cluster lists it. */
interface MasterNode {
  readonly host: string;
  readonly port: number;
}

/** What this adapter uses of a node-redis (v5, v6) Cluster from `createCluster()`. */
export interface NodeRedisCluster extends Emitter {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly masters: readonly MasterNode[];
  /** Per slot, its shard: the master it sends the slot's commands to. */
  readonly slots: readonly ({ readonly master: MasterNode } | undefined)[];
  /** Its options as given (node-redis has no public getter): for the key prefix. */
  readonly _options?: { readonly keyPrefix?: RedisArgument };
  nodeClient(node: MasterNode): Promise<NodeRedisClient> | NodeRedisClient;
  sendCommand(
    firstKey: RedisArgument | undefined,
    isReadonly: boolean | undefined,
    args: readonly RedisArgument[],
    options?: object,
  ): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * A node-redis Cluster: each script goes to its first key's slot (`sendCommand(firstKey, …)`),
 * where node-redis follows MOVED and ASK itself.
 */
export class NodeRedisClusterPort implements RedisClientPort {
  readonly isCluster = true;
  private readonly prefix: RedisArgument | undefined;

  constructor(private readonly cluster: NodeRedisCluster) {
    this.prefix = cluster._options?.keyPrefix;
  }

  isReady(): boolean {
    return this.cluster.isReady;
  }

  state(): string {
    return stateOf(this.cluster);
  }

  /** node-redis can connect a closed Cluster again: never for good. */
  hasEnded(): boolean {
    return false;
  }

  readonly script = (name: 'eval' | 'evalsha', args: readonly (string | number)[]) => {
    const command = scriptCommand(name, args, this.prefix);
    return this.cluster.sendCommand(command[3], false, command, STORE_COMMAND_OPTIONS);
  };

  del(keys: readonly string[]): Promise<unknown> {
    const command = ['DEL', ...keys.map((key) => prefixed(this.prefix, key))];
    return this.cluster.sendCommand(command[1], false, command, STORE_COMMAND_OPTIONS);
  }

  masterOf(slot: number): string | undefined {
    const master = this.cluster.slots[slot]?.master;
    return master && `${master.host}:${master.port}`;
  }

  masterTimes(): Promise<number[]> {
    return Promise.all(this.cluster.masters.map((master) => this.timeOf(master)));
  }

  masterTime(node: string): Promise<number> {
    const master = this.cluster.masters.find(({ host, port }) => `${host}:${port}` === node);
    return master
      ? this.timeOf(master)
      : Promise.reject(new Error(`no Redis Cluster master ${node}`));
  }

  private async timeOf(master: MasterNode): Promise<number> {
    const client = await this.cluster.nodeClient(master);
    return timeMs((await client.sendCommand(['TIME'], STORE_COMMAND_OPTIONS)) as string[]);
  }

  /** The Cluster's first connection ('connect'), and each node's ('node-ready'). */
  onReady(listener: () => void): () => void {
    return listen(this.cluster, ['connect', 'node-ready'], listener);
  }

  onError(listener: (error: Error) => void): () => void {
    return listen(this.cluster, ['error', 'node-error'], listener);
  }

  /** node-redis never connects by itself: `connect()` is the app's to call, once. */
  connectIfLazy(): void {}

  describe(): string {
    const masters = this.cluster.masters.map(({ host, port }) => `${host}:${port}`);
    return `Redis Cluster${masters.length > 0 ? ` (masters ${masters.join(', ')})` : ''}`;
  }

  close(): Promise<void> {
    return this.cluster.close();
  }
}
