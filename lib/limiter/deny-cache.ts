import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/** One denial the store answered, as this pod remembers it. */
interface Denial {
  /** The store keys of the request, for reset(). */
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  /** When the request was sent, in the cache's clock. */
  readonly sentAt: number;
  /** Per policy: until when it denies `costs[i]` or more; -Infinity where it admitted. */
  readonly until: readonly number[];
  /** The latest of `until`: past it the entry can deny nothing. */
  readonly expiresAt: number;
  readonly results: readonly PolicyResult[];
}

/**
 * Denials this pod already knows, answered without a store round trip. A policy that
 * denied a cost `c` until `T` (the time the request was sent plus its retryAfterMs) denies
 * every cost of `c` or more until `T` whatever else happens, since other pods can only
 * consume, never give back; so an answer from here is the store's own. Only `reset()`
 * gives back, and it clears this pod's entries (not other pods').
 *
 * Bounded: at most `maxEntries`, the oldest written dropped first; expired entries go when
 * next looked up. No timers.
 */
export class DenyCache {
  private readonly entries = new Map<string, Denial>();
  /** Bumped by forget(): a denial sent before a reset must not be remembered after it. */
  private generation = 0;

  /**
   * @param margin how much earlier than the store said a denial should end, for a store
   *   whose clock may run ahead of the cache's
   */
  constructor(
    private readonly maxEntries: number,
    private readonly margin: (retryAfterMs: number) => number,
  ) {}

  /** The generation to pass back to remember(), read when the request is sent. */
  get current(): number {
    return this.generation;
  }

  /** Holds no denial (the usual case): nothing to look up. */
  get empty(): boolean {
    return this.entries.size === 0;
  }

  /**
   * The denial that covers this request at `now`, counted down to `now`, if any: some
   * policy that denied before still denies, at a cost no larger than this request's.
   */
  lookup(
    id: string,
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    now: number,
  ): RateLimitDecision | undefined {
    const denial = this.entries.get(id);
    if (denial === undefined) return undefined;
    if (now >= denial.expiresAt) {
      this.entries.delete(id);
      return undefined;
    }
    if (!samePolicies(denial.policies, policies)) return undefined;
    let covered = false;
    for (let i = 0; i < costs.length && !covered; i++) {
      covered = now < denial.until[i] && costs[i] >= denial.costs[i];
    }
    if (!covered) return undefined;
    const elapsed = now - denial.sentAt;
    // A loop, not map(): this answers every request of a client hammering a spent limit.
    const results = new Array<PolicyResult>(denial.results.length);
    for (let i = 0; i < results.length; i++) {
      const result = denial.results[i];
      const denies = now < denial.until[i] && costs[i] >= denial.costs[i];
      results[i] = {
        policy: result.policy,
        allowed: !denies,
        limit: result.limit,
        window: result.window,
        capacity: result.capacity,
        remaining: result.remaining,
        resetMs: Math.max(0, result.resetMs - elapsed),
        retryAfterMs: denies ? result.retryAfterMs - elapsed : 0,
        delayMs: 0,
      };
    }
    return { allowed: false, cached: true, results };
  }

  /** Keeps a denial the store answered for a request sent at `sentAt`, unless a reset came in between. */
  remember(
    id: string,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    sentAt: number,
    generation: number,
    decision: RateLimitDecision,
  ): void {
    if (generation !== this.generation) return;
    let expiresAt = -Infinity;
    const until = decision.results.map(({ allowed, retryAfterMs }) => {
      if (allowed) return -Infinity;
      const at = sentAt + retryAfterMs - this.margin(retryAfterMs);
      if (at > expiresAt) expiresAt = at;
      return at;
    });
    // Nothing to hold (or a denial no time lifts, which only a cost beyond capacity gives).
    if (!(expiresAt > sentAt) || expiresAt === Infinity) return;
    this.entries.delete(id);
    this.entries.set(id, {
      keys,
      policies,
      costs,
      sentAt,
      until,
      expiresAt,
      results: decision.results,
    });
    if (this.entries.size > this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value!);
    }
  }

  /** Drops every entry that involves one of these store keys. */
  forget(keys: readonly string[]): void {
    this.generation++;
    for (const [id, denial] of this.entries) {
      if (denial.keys.some((key) => keys.includes(key))) this.entries.delete(id);
    }
  }
}

/** Alike in everything the store decides by (names are part of the keys already). */
function samePolicies(a: readonly ResolvedPolicy[], b: readonly ResolvedPolicy[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const p = a[i];
    const q = b[i];
    if (
      p !== q &&
      (p.algorithm !== q.algorithm ||
        p.limit !== q.limit ||
        p.windowMs !== q.windowMs ||
        p.burst !== q.burst ||
        p.blockMs !== q.blockMs)
    ) {
      return false;
    }
  }
  return true;
}
