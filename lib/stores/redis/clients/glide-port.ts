import { type RedisClientPort, timeMs } from './redis-client-port.js';

/** Where a Valkey GLIDE command goes: a route of GLIDE's own, as its Cluster client takes it. */
type GlideRoute = 'allPrimaries' | { type: 'routeByAddress'; host: string; port: number };

/** The options of a GLIDE command: its route (Cluster) and how its reply is decoded. */
interface GlideCommandOptions {
  readonly route?: GlideRoute;
  readonly decoder?: number;
}

/** A GLIDE server address, as its configuration holds it. */
interface GlideAddress {
  readonly host: string;
  readonly port?: number;
}

/**
 * What this adapter uses of a Valkey GLIDE (2.x) `GlideClient` or `GlideClusterClient`.
 * `isClosed` and `config` are protected in GLIDE's types, and read only where present.
 */
export interface GlideClient {
  /** Set by `close()`: a closed client rejects every command. */
  readonly isClosed?: boolean;
  /** The configuration it was created with: where it connects, for the start log. */
  readonly config?: {
    readonly addresses?: readonly GlideAddress[];
    readonly databaseId?: number;
  };
  customCommand(args: readonly string[], options?: GlideCommandOptions): Promise<unknown>;
  close(errorMessage?: string): void;
}

/**
 * GLIDE's `Decoder.String`: replies as strings and numbers whatever `defaultDecoder` the app
 * set (with `Decoder.Bytes`, a fraction such as "333.25" would come back as a Buffer). The
 * enum's value, so that the package need not load GLIDE to name it.
 */
const DECODER_STRING = 1;
const STORE_COMMAND_OPTIONS: GlideCommandOptions = Object.freeze({ decoder: DECODER_STRING });
const ALL_PRIMARIES: GlideCommandOptions = Object.freeze({
  route: 'allPrimaries',
  decoder: DECODER_STRING,
});
/** GLIDE's default port, where an address names none. */
const DEFAULT_PORT = 6379;

/**
 * A Valkey GLIDE client, standalone or Cluster. Scripts go out as raw EVALSHA and EVAL
 * (`customCommand`), as on every other client: the store keeps its scripts and their
 * NOSCRIPT recovery (one EVAL, where GLIDE's `invokeScript` would send SCRIPT LOAD and then
 * EVALSHA again), and no GLIDE `Script` is made, so none is left to release. GLIDE's Cluster
 * client sends an EVALSHA to the slot of its first key, as it routes any keyed command, and
 * follows MOVED and ASK itself.
 *
 * GLIDE reports no connection state and no events: a command waits for a reconnect up to
 * the client's `requestTimeout`, and fails then. So the client counts as ready until it is
 * closed, and while Redis is down each decision fails at the limiter's deadline (or GLIDE's
 * timeout, if shorter) until the circuit breaker opens; its probe (Redis TIME) finds Redis
 * back. Nor does GLIDE tell which master serves a slot: its Cluster has one breaker.
 */
export class GlidePort implements RedisClientPort {
  constructor(
    private readonly client: GlideClient,
    readonly isCluster: boolean,
  ) {}

  isReady(): boolean {
    return this.client.isClosed !== true;
  }

  state(): string {
    return this.isReady() ? 'ready' : 'closed';
  }

  /** A closed GLIDE client never connects again: the app makes a new one. */
  hasEnded(): boolean {
    return !this.isReady();
  }

  readonly script = (name: 'eval' | 'evalsha', args: readonly (string | number)[]) => {
    const command = new Array<string>(args.length + 1);
    command[0] = name === 'eval' ? 'EVAL' : 'EVALSHA';
    for (let i = 0; i < args.length; i++) command[i + 1] = String(args[i]);
    return this.client.customCommand(command, STORE_COMMAND_OPTIONS);
  };

  del(keys: readonly string[]): Promise<unknown> {
    return this.client.customCommand(['DEL', ...keys], STORE_COMMAND_OPTIONS);
  }

  /** GLIDE keeps its slot map to itself. */
  masterOf(): undefined {
    return undefined;
  }

  async masterTimes(): Promise<number[]> {
    if (!this.isCluster) return [await this.masterTime()];
    const replies = (await this.client.customCommand(['TIME'], ALL_PRIMARIES)) as
      | readonly { readonly value: readonly string[] }[]
      | Readonly<Record<string, readonly string[]>>;
    // Per master, its reply by its address: a list of { key, value } (GLIDE 2.5), or an
    // object, as GLIDE's own commands give it.
    const times = Array.isArray(replies)
      ? replies.map(({ value }) => value)
      : Object.values(replies);
    return times.map(timeMs);
  }

  async masterTime(node?: string): Promise<number> {
    let options = STORE_COMMAND_OPTIONS;
    if (this.isCluster && node !== undefined) {
      const at = node.lastIndexOf(':');
      const route: GlideRoute = {
        type: 'routeByAddress',
        host: node.slice(0, at),
        port: Number(node.slice(at + 1)),
      };
      options = { route, decoder: DECODER_STRING };
    }
    return timeMs((await this.client.customCommand(['TIME'], options)) as string[]);
  }

  /** No connection events in GLIDE: nothing to hear. */
  onReady(): () => void {
    return ignore;
  }

  /** GLIDE fails each command with its error; the client reports none besides. */
  onError(): () => void {
    return ignore;
  }

  /** A GLIDE client made with `lazyConnect` connects at its first command by itself. */
  connectIfLazy(): void {}

  describe(): string {
    const { addresses = [], databaseId } = this.client.config ?? {};
    const where = addresses.map(({ host, port }) => `${host}:${port ?? DEFAULT_PORT}`).join(', ');
    if (this.isCluster) return `Redis Cluster${where ? ` (nodes ${where})` : ''}`;
    return `Redis at ${where || `localhost:${DEFAULT_PORT}`}${databaseId ? ` db ${databaseId}` : ''}`;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}

const ignore = (): void => undefined;
