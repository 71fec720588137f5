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

/** What this adapter uses of a node-redis (v5, v6) client from `createClient()`. */
export interface NodeRedisClient extends Emitter {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: {
    readonly socket?: { readonly host?: string; readonly port?: number; readonly path?: string };
    readonly database?: number;
    readonly keyPrefix?: RedisArgument;
  };
  sendCommand(args: readonly RedisArgument[], options?: object): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * A node-redis client. Its scripts go out as raw commands (`sendCommand`), as node-redis'
 * own `evalSha` would send them, without its command parser.
 */
export class NodeRedisPort implements RedisClientPort {
  readonly isCluster = false;
  private readonly prefix: RedisArgument | undefined;

  constructor(private readonly client: NodeRedisClient) {
    this.prefix = client.options?.keyPrefix;
  }

  isReady(): boolean {
    return this.client.isReady;
  }

  state(): string {
    return stateOf(this.client);
  }

  /** node-redis can connect a closed client again: never for good. */
  hasEnded(): boolean {
    return false;
  }

  readonly script = (name: 'eval' | 'evalsha', args: readonly (string | number)[]) =>
    this.client.sendCommand(scriptCommand(name, args, this.prefix), STORE_COMMAND_OPTIONS);

  del(keys: readonly string[]): Promise<unknown> {
    return this.client.sendCommand(
      ['DEL', ...keys.map((key) => prefixed(this.prefix, key))],
      STORE_COMMAND_OPTIONS,
    );
  }

  masterOf(): undefined {
    return undefined;
  }

  async masterTimes(): Promise<number[]> {
    return [await this.masterTime()];
  }

  async masterTime(): Promise<number> {
    return timeMs((await this.client.sendCommand(['TIME'], STORE_COMMAND_OPTIONS)) as string[]);
  }

  onReady(listener: () => void): () => void {
    return listen(this.client, ['ready'], listener);
  }

  onError(listener: (error: Error) => void): () => void {
    return listen(this.client, ['error'], listener);
  }

  /** node-redis never connects by itself: `connect()` is the app's to call, once. */
  connectIfLazy(): void {}

  /** node-redis parses a URL into `socket` and `database` itself. */
  describe(): string {
    const { socket, database } = this.client.options ?? {};
    const where = socket?.path ?? `${socket?.host ?? 'localhost'}:${socket?.port ?? 6379}`;
    return `Redis at ${where}${database ? ` db ${database}` : ''}`;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
