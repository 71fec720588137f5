import type { Cluster, Redis } from 'ioredis';
import { type ScriptCall, scriptCall } from '../ioredis-commands.js';
import { type RedisClientPort, timeMs } from './redis-client-port.js';

/**
 * An ioredis (5 or 6) or iovalkey client, `Redis` or `Cluster`: iovalkey is a fork of
 * ioredis with the same API, down to the Command class the fast path uses
 * (ioredis-commands.ts). The types are ioredis 6's, which both share.
 */
export class IoredisPort implements RedisClientPort {
  readonly isCluster: boolean;
  readonly script: ScriptCall;

  constructor(private readonly client: Redis | Cluster) {
    this.isCluster = client.isCluster;
    this.script = scriptCall(client);
  }

  isReady(): boolean {
    return this.client.status === 'ready';
  }

  state(): string {
    return this.client.status;
  }

  hasEnded(): boolean {
    return this.client.status === 'end';
  }

  del(keys: readonly string[]): Promise<unknown> {
    return this.client.del(...keys);
  }

  /** ioredis' slot map: per slot, its master first, as "host:port". */
  masterOf(slot: number): string | undefined {
    const { client } = this;
    return isCluster(client) ? client.slots[slot]?.[0] : undefined;
  }

  masterTimes(): Promise<number[]> {
    const { client } = this;
    const nodes = isCluster(client) ? client.nodes('master') : [client];
    return Promise.all(nodes.map(timeOf));
  }

  masterTime(node: string): Promise<number> {
    const { client } = this;
    if (!isCluster(client)) return timeOf(client);
    const master = client
      .nodes('master')
      .find(({ options }) => `${options.host}:${options.port}` === node);
    return master ? timeOf(master) : Promise.reject(new Error(`no Redis Cluster master ${node}`));
  }

  onReady(listener: () => void): () => void {
    this.client.on('ready', listener);
    return () => this.client.off('ready', listener);
  }

  onError(listener: (error: Error) => void): () => void {
    const heard = (error: Error) => {
      quiet((this.client as Redis).stream);
      listener(error);
    };
    this.client.on('error', heard);
    return () => this.client.off('error', heard);
  }

  connectIfLazy(): void {
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
  }

  /** Host and port (or socket path), the Sentinel master's name, or the Cluster's masters. */
  describe(): string {
    const { client } = this;
    if (isCluster(client)) {
      const masters = client
        .nodes('master')
        .map(({ options }) => `${options.host}:${options.port}`);
      return `Redis Cluster${masters.length > 0 ? ` (masters ${masters.join(', ')})` : ''}`;
    }
    const { host, port, path, sentinels, name, db } = client.options;
    const where = sentinels?.length ? `Sentinel master "${name}"` : path ? path : `${host}:${port}`;
    return `Redis at ${where}${db ? ` db ${db}` : ''}`;
  }

  async close(): Promise<void> {
    // A handshake still under way fails after this, and the closed client passes on no error
    // (ioredis' own listener hears the first, and nothing the second).
    (this.client as Redis).stream?.on('error', ignore);
    this.client.disconnect();
  }
}

const isCluster = (client: Redis | Cluster): client is Cluster => client.isCluster;

/**
 * ioredis hears one 'error' from a socket (`once`), and a TLS handshake can fail twice, a
 * certificate error and then the server's alert ('tlsv1 alert decode error'): the second,
 * heard by no one, would be thrown and end the process. The client has reported the first
 * by then; the socket closes and ioredis reconnects as it would.
 */
function quiet(stream: Redis['stream'] | undefined): void {
  if (stream && stream.listenerCount('error') === 0) stream.on('error', ignore);
}

const ignore = (): void => undefined;
const timeOf = async (node: Redis): Promise<number> => timeMs(await node.time());
