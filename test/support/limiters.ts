import { once } from 'node:events';
import { Redis } from 'ioredis';
// Imported file by file, not through lib/index.js: mutation testing reruns the suites
// that depend on a mutated file, and the index would make every suite depend on all of lib/.
import type { RateLimitModuleOptions } from '../../lib/interfaces/rate-limit-options.interface.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import { MemoryStore } from '../../lib/stores/memory/memory.store.js';
import { RedisStore } from '../../lib/stores/redis/redis.store.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import type {
  DecideRequest,
  RateLimitStore,
  StoreDecision,
} from '../../lib/interfaces/rate-limit-store.interface.js';
import { startRedisServer } from './redis-server.js';
import {
  type ClientUnderTest,
  clientOf,
  CLIENTS_ON,
  type RedisClientName,
  untilReady,
} from './redis-clients.js';
import type { ServerKind } from './server-kinds.js';

/** 'redis': ioredis 6 (its client readable as `client`); or another client library by name. */
export type StoreKind = 'redis' | 'memory' | RedisClientName;

/** The Redis stores the suites decide on on `server`: a store per client of CLIENTS_ON. */
export const storeKindsOn = (server: ServerKind): StoreKind[] =>
  CLIENTS_ON[server].map((name) => (name === 'ioredis 6' ? 'redis' : name));

/** A virtual clock the test moves by hand. */
export class VirtualClock {
  constructor(public now = 1_700_000_000_000) {}
  readonly read = () => this.now;
  set(ms: number): void {
    this.now = ms;
  }
  advance(ms: number): void {
    this.now += ms;
  }
}

/**
 * A RateLimiter on a store of the given kind, without a Nest application around it. For a
 * client library named by the kind (not 'redis'), the store and limiter are made once its
 * client is, in ready(): a GLIDE client is made asynchronously.
 */
export class LimiterFixture {
  limiter!: RateLimiter;
  readonly client: Redis | undefined;
  store!: RateLimitStore;

  /** The client of a library named by the kind (not 'redis'), being made. */
  private readonly other: Promise<ClientUnderTest> | undefined;
  private readonly options: RateLimitModuleOptions;

  constructor(kind: StoreKind, redisUrl: string | undefined, options: RateLimitModuleOptions = {}) {
    this.options = options;
    this.client =
      kind === 'redis' ? new Redis(redisUrl!, { enableAutoPipelining: true }) : undefined;
    this.other = kind === 'redis' || kind === 'memory' ? undefined : clientOf(kind, redisUrl!);
    if (!this.other) this.use(this.client ? new RedisStore(this.client, true) : new MemoryStore());
  }

  /** Resolves once the Redis client (if any) can take commands. */
  async ready(): Promise<this> {
    if (this.client && this.client.status !== 'ready') await once(this.client, 'ready');
    if (this.other && !this.store) {
      const { client } = await this.other;
      await untilReady(client);
      this.use(new RedisStore(client, true));
    }
    return this;
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private use(store: RateLimitStore): void {
    this.store = store;
    this.limiter = new RateLimiter(resolveOptions(this.options), store);
  }
}

/** An embedded store that records the keys of every decision put to it. */
export class KeyRecordingStore implements RateLimitStore {
  readonly keys: string[] = [];
  private readonly inner = new MemoryStore();

  decide(request: DecideRequest): Promise<StoreDecision> {
    this.keys.push(...request.keys);
    return this.inner.decide(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Boots two apps on a Redis of their own, one failing open and one closed, kills that Redis,
 * runs `body`, then closes both apps.
 */
export async function withRedisDown<App extends { close(): Promise<void> }>(
  boot: (options: RateLimitModuleOptions) => Promise<App>,
  body: (open: App, closed: App) => Promise<void>,
): Promise<void> {
  const failing = await startRedisServer();
  const open = await boot({ redis: failing.url });
  const closed = await boot({ redis: failing.url, failureMode: 'closed' });
  try {
    await failing.kill();
    await body(open, closed);
  } finally {
    await Promise.all([open.close(), closed.close()]);
    await failing.stop();
  }
}
