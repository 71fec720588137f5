import { sizePolicy } from '../config/resolved-policy.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import type { DecideRequest, StoreDecision } from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/**
 * failureMode 'local': while the store is unavailable, decides in this process with the
 * embedded store, each policy cut to this instance's share of its limit and burst,
 * `floor(x / instances)` but at least 1. With every instance doing the same, an outage
 * neither lifts the limits nor stops the service. Budgets kept here are separate from the
 * store's and are not copied back when it returns.
 */
export class LocalFallback {
  /** Created on first use: an app whose store never fails runs no sweeper for it. */
  private store: MemoryStore | undefined;
  private readonly shares = new WeakMap<ResolvedPolicy, ResolvedPolicy>();

  constructor(private readonly instances: number) {}

  decide(request: DecideRequest): Promise<StoreDecision> {
    this.store ??= new MemoryStore();
    return this.store.decide({
      ...request,
      policies: request.policies.map((policy) => this.share(policy)),
    });
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.store?.reset(keys);
  }

  async close(): Promise<void> {
    await this.store?.close();
    this.store = undefined;
  }

  /** This instance's share of a policy, worked out once per policy. */
  share(policy: ResolvedPolicy): ResolvedPolicy {
    let share = this.shares.get(policy);
    if (!share) {
      const cut = (value: number) => Math.max(1, Math.floor(value / this.instances));
      share = sizePolicy(policy, cut(policy.limit), cut(policy.burst));
      this.shares.set(policy, share);
    }
    return share;
  }
}
