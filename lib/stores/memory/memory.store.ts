import { BLOCK_KEY_SUFFIX } from '../store-keys.js';
import type { Algorithm } from '../../interfaces/rate-limit-policy.interface.js';
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import type { MemoryAlgorithm, MemoryPolicy, MemoryVerdict } from './memory-algorithm.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';
import type {
  DecideRequest,
  PolicyVerdict,
  RateLimitStore,
  RefundRequest,
  StoreDecision,
} from '../../interfaces/rate-limit-store.interface.js';
import { STALE_DECISION } from '../../interfaces/rate-limit-store.interface.js';

const ALGORITHMS: Record<Algorithm, MemoryAlgorithm<unknown, MemoryVerdict>> = {
  'token-bucket': tokenBucket as MemoryAlgorithm<unknown, MemoryVerdict>,
  'leaky-bucket': leakyBucket as MemoryAlgorithm<unknown, MemoryVerdict>,
  'fixed-window': fixedWindow as MemoryAlgorithm<unknown, MemoryVerdict>,
  'sliding-window-log': slidingWindowLog as MemoryAlgorithm<unknown, MemoryVerdict>,
  'sliding-window-counter': slidingWindowCounter as MemoryAlgorithm<unknown, MemoryVerdict>,
};

interface Entry {
  state: unknown;
  /**
   * Real time (Date.now) past which the entry is gone, as Redis expires a key: never in the
   * decisions' clock, which a virtual clock may run far ahead. Decisions see an expired
   * entry as absent, as Redis does: under one limit a state dates itself, but when a
   * client's limit changes (limits per request), a token bucket's key outlives or falls
   * short of what the new rate would keep, and both stores must answer alike.
   */
  expiresAt: number;
}

const SWEEP_EVERY_MS = 10_000;

/**
 * The embedded store: the Lua scripts' semantics in this process, for one-process apps,
 * development and tests. Limits are per process, which the module warns about at start.
 */
export class MemoryStore implements RateLimitStore {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = SWEEP_EVERY_MS) {
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs).unref();
  }

  async decide(request: DecideRequest): Promise<StoreDecision> {
    const realNow = Date.now();
    if (request.wantedUntil !== undefined && realNow > request.wantedUntil) return STALE_DECISION;
    const now = request.now ?? realNow;
    const { keys, policies, costs } = request;
    const checked = policies.map((policy, i) => {
      const algorithm = ALGORITHMS[policy.algorithm];
      const p: MemoryPolicy = {
        limit: policy.limit,
        window: policy.windowMs,
        burst: policy.burst,
        cost: costs[i],
      };
      const verdict = algorithm.check(this.stateAt(keys[i], realNow), now, p);
      if (policy.blockMs > 0) this.block(keys[i], policy.blockMs, request, now, realNow, verdict);
      return { algorithm, p, verdict };
    });
    const allowed = checked.every(({ verdict }) => verdict.allowed);
    if (allowed && request.mode === 'consume') {
      checked.forEach(({ algorithm, p, verdict }, i) => {
        const { state, ttlMs } = algorithm.commit(now, p, verdict);
        const lifetime = Math.max(Math.ceil(ttlMs), request.ttlFloorMs, 1);
        this.entries.set(keys[i], { state, expiresAt: realNow + lifetime });
      });
    }
    return {
      allowed,
      verdicts: checked.map(({ verdict }): PolicyVerdict => ({
        allowed: verdict.allowed,
        remaining: Math.max(0, Math.floor(verdict.remaining)),
        resetMs: verdict.reset,
        retryAfterMs: verdict.retry,
        delayMs: allowed ? verdict.delay : 0,
      })),
    };
  }

  /** Mirrors lua/refund.lua: each policy's state with its units given back, if it has one. */
  async refund(request: RefundRequest): Promise<void> {
    const realNow = Date.now();
    const now = request.now ?? realNow;
    const { keys, policies, units, chargedAt } = request;
    for (let i = 0; i < policies.length; i++) {
      const state = this.stateAt(keys[i], realNow);
      if (state === undefined) continue;
      const policy = policies[i];
      const p: MemoryPolicy = {
        limit: policy.limit,
        window: policy.windowMs,
        burst: policy.burst,
        cost: units[i],
      };
      const given = ALGORITHMS[policy.algorithm].giveBack(state, now, p, chargedAt[i]);
      if (given === undefined) continue;
      const lifetime = Math.max(Math.ceil(given.ttlMs), request.ttlFloorMs, 1);
      this.entries.set(keys[i], { state: given.state, expiresAt: realNow + lifetime });
    }
  }

  async reset(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      this.entries.delete(key);
      this.entries.delete(key + BLOCK_KEY_SUFFIX);
    }
  }

  /** The state under `key`, alive up to its expiry time included, as a Redis key. */
  private stateAt(key: string, realNow: number): unknown {
    const entry = this.entries.get(key);
    return entry && entry.expiresAt >= realNow ? entry.state : undefined;
  }

  /**
   * Mirrors lua/block.lua: a policy's block denies while it lasts; otherwise a denial in a
   * consume starts one. Its entry holds when it ends, on the decisions' clock.
   */
  private block(
    key: string,
    blockMs: number,
    request: DecideRequest,
    now: number,
    realNow: number,
    verdict: MemoryVerdict,
  ): void {
    const blockKey = key + BLOCK_KEY_SUFFIX;
    const ends = this.stateAt(blockKey, realNow) as number | undefined;
    let left: number;
    if (ends !== undefined && now < ends) {
      left = ends - now;
    } else {
      if (verdict.allowed || request.mode !== 'consume') return;
      left = blockMs;
      const lifetime = Math.max(Math.ceil(blockMs), request.ttlFloorMs, 1);
      this.entries.set(blockKey, { state: now + blockMs, expiresAt: realNow + lifetime });
    }
    verdict.allowed = false;
    verdict.remaining = 0;
    verdict.reset = Math.max(verdict.reset, left);
    verdict.retry = Math.max(verdict.retry, left);
    verdict.delay = 0;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  /** Drops budgets that can no longer change a decision, so memory follows active clients. */
  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}
