import { once } from 'node:events';
import { Redis } from 'ioredis';
// Imported file by file, not through lib/index.js: mutation testing reruns the suites
// that depend on a mutated file, and the index would make every suite depend on all of lib/.
import type { RateLimitModuleOptions } from '../../lib/rate-limit-options.interface.js';
import { RateLimiter } from '../../lib/rate-limiter.service.js';
import { MemoryStore } from '../../lib/stores/memory.store.js';
import { RedisStore } from '../../lib/stores/redis.store.js';
import { resolveOptions } from '../../lib/resolved-options.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.interface.js';

export type StoreKind = 'redis' | 'memory';

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

/** A RateLimiter on a store of the given kind, without a Nest application around it. */
export class LimiterFixture {
  readonly limiter: RateLimiter;
  readonly client: Redis | undefined;
  readonly store: RateLimitStore;

  constructor(kind: StoreKind, redisUrl: string | undefined, options: RateLimitModuleOptions = {}) {
    this.client =
      kind === 'redis' ? new Redis(redisUrl!, { enableAutoPipelining: true }) : undefined;
    this.store = this.client ? new RedisStore(this.client, true) : new MemoryStore();
    this.limiter = new RateLimiter(resolveOptions(options), this.store);
  }

  /** Resolves once the Redis client (if any) can take commands. */
  async ready(): Promise<this> {
    if (this.client && this.client.status !== 'ready') await once(this.client, 'ready');
    return this;
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
