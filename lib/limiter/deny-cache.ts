import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';
import type { DecisionMode } from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/** One denial the store answered, as this pod remembers it. */
interface Denial {
  /** The store keys of the request: a charge or reset on any of them ends the entry. */
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  /**
   * Some policy with a block denied. A consume that policy denies starts a block when none
   * lasts, and when the one that does ends is not known here: such an entry answers a
   * consume only at the instant of a consume's denial (whose block is then in force).
   */
  readonly blocks: boolean;
  readonly mode: DecisionMode;
  /** When the request was sent, in the cache's clock. */
  readonly sentAt: number;
  /** Before this, the answer counted down to `now` is the store's (see horizon()). */
  readonly validUntil: number;
  readonly results: readonly PolicyResult[];
}

/**
 * Denials this pod already knows, answered without a store round trip, and only where the
 * answer is provably the one the store would give: every field, retryAfterMs included
 * (which the contract makes exact).
 *
 * An entry answers the same request again: the same policies at the same costs, while
 * nothing this pod sent has charged or reset any of its keys (a denial charges nothing,
 * so the state the store decided on is still there), at a later `now` that is still before
 * its horizon. Within the horizon each policy's answer moves with time in the one way the
 * cache can reproduce: `remaining` stays, `resetMs` and `retryAfterMs` count down by the
 * elapsed time. See horizon() for when that holds; elsewhere the store is asked.
 *
 * Time: with an app clock (local or a function) the request's `now` is the store's, and
 * the count-down is by whole milliseconds only (fractional times are answered only at the
 * same instant). With Redis's clock the store's time is not known here: the elapsed time
 * on this process's monotonic clock, in whole ms, stands in for it, and the horizon ends
 * early by `margin` so that a cached denial never outlasts Redis's own.
 *
 * Other pods' charges are invisible here, as they are to any answer given before them;
 * they can only make a denial last longer, never admit what the cache denies. Their
 * refunds could: a request with a policy that counts by outcome (`count`), whose charges
 * any pod may give back, is never kept; this pod's own refunds drop what they change
 * (forget). A `RateLimiter.refund` another pod sends is not seen here (docs/deny-cache.md).
 *
 * Bounded: at most `maxEntries`, the oldest written dropped first; expired entries go when
 * next looked up. No timers.
 */
export class DenyCache {
  private readonly entries = new Map<string, Denial>();
  /**
   * Store key -> ids of the entries on several keys that hold it: a charge through one
   * route must end the entries of the routes it shares a budget with. An entry on one key
   * has that key as its id and needs no index.
   */
  private readonly sharedKeys = new Map<string, Set<string>>();
  /** Bumped by forget(): a denial sent before a reset must not be remembered after it. */
  private generation = 0;

  /**
   * @param margin how much earlier than the store said a state should end, for a store
   *   whose clock may run ahead of the cache's
   * @param appClock whether the cache's clock is the one the store decides by
   */
  constructor(
    private readonly maxEntries: number,
    private readonly margin: (ms: number) => number,
    private readonly appClock: boolean,
  ) {}

  /** The generation to pass back to remember(), read when the request is sent. */
  get current(): number {
    return this.generation;
  }

  /** Holds no denial (the usual case): nothing to look up. */
  get empty(): boolean {
    return this.entries.size === 0;
  }

  /** The store's answer to this request at `now`, if this cache knows it exactly. */
  lookup(
    id: string,
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    mode: DecisionMode,
    now: number,
  ): RateLimitDecision | undefined {
    const denial = this.entries.get(id);
    if (denial === undefined) return undefined;
    const elapsed = now - denial.sentAt;
    // The same instant on the store's clock: the same state gives the same answer.
    const sameInstant = elapsed === 0 && this.appClock;
    if (!(now < denial.validUntil) && !sameInstant) {
      if (elapsed > 0) this.drop(id);
      return undefined;
    }
    if (!(elapsed >= 0)) return undefined;
    if (mode === 'consume' && denial.blocks && !(sameInstant && denial.mode === 'consume')) {
      return undefined;
    }
    if (!sameElements(denial.costs, costs) || !samePolicies(denial.policies, policies)) {
      return undefined;
    }
    // Whole ms: an app clock's are checked at remember(); Redis decides in whole ms.
    const ms = this.appClock ? elapsed : Math.floor(elapsed);
    // A loop, not map(): this answers every request of a client hammering a spent limit.
    const results = new Array<PolicyResult>(denial.results.length);
    for (let i = 0; i < results.length; i++) {
      const result = denial.results[i];
      results[i] = {
        policy: result.policy,
        allowed: result.allowed,
        limit: result.limit,
        window: result.window,
        capacity: result.capacity,
        remaining: result.remaining,
        resetMs: result.resetMs === 0 ? 0 : result.resetMs - ms,
        retryAfterMs: result.allowed ? 0 : result.retryAfterMs - ms,
        // A denied request waits for nothing.
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
    mode: DecisionMode,
    sentAt: number,
    generation: number,
    decision: RateLimitDecision,
  ): void {
    if (generation !== this.generation || decision.allowed) return;
    let blocks = false;
    let shortest = Infinity;
    // Counting down by whole ms is exact only from a whole-ms instant.
    const wholeMs = !this.appClock || Number.isInteger(sentAt);
    for (let i = 0; i < decision.results.length; i++) {
      const result = decision.results[i];
      // A denial no time lifts: only a cost beyond capacity gives it, which is not kept.
      if (result.retryAfterMs === Infinity) return;
      if (policies[i].count !== 'all') return;
      if (!result.allowed && policies[i].blockMs > 0) blocks = true;
      const ms = wholeMs ? horizon(result, policies[i], costs[i]) : 0;
      if (ms < shortest) shortest = ms;
    }
    // No policy denied (none to count down): nothing this cache can answer.
    if (shortest === Infinity) return;
    const validUntil = sentAt + shortest - (shortest > 0 ? this.margin(shortest) : 0);
    // Nothing to answer later (an app clock's same instant aside).
    if (!(validUntil > sentAt) && !this.appClock) return;
    this.drop(id);
    // Copied: a caller may refill its costs array in place for its next call.
    const denial = { keys, policies, costs: [...costs], blocks, mode, sentAt, validUntil };
    this.entries.set(id, { ...denial, results: decision.results });
    if (keys.length > 1) {
      for (const key of keys) {
        let ids = this.sharedKeys.get(key);
        if (ids === undefined) this.sharedKeys.set(key, (ids = new Set()));
        ids.add(id);
      }
    }
    if (this.entries.size > this.maxEntries) this.drop(this.entries.keys().next().value!);
  }

  /**
   * This pod's store call charged these keys (or may have: a consume's denial can start a
   * block): the entries on them describe a state that is gone. Store calls on one key are
   * answered in the order they were sent, so a denial remembered before this was decided
   * before the charge.
   */
  charged(keys: readonly string[]): void {
    for (let i = 0; i < keys.length; i++) {
      this.drop(keys[i]);
      const ids = this.sharedKeys.get(keys[i]);
      if (ids !== undefined) for (const id of [...ids]) this.drop(id);
    }
  }

  /** Drops every entry that involves one of these store keys, as a reset does to their state. */
  forget(keys: readonly string[]): void {
    this.generation++;
    this.charged(keys);
  }

  private drop(id: string): void {
    const denial = this.entries.get(id);
    if (denial === undefined) return;
    this.entries.delete(id);
    if (denial.keys.length === 1) return;
    for (const key of denial.keys) {
      const ids = this.sharedKeys.get(key);
      ids?.delete(id);
      if (ids?.size === 0) this.sharedKeys.delete(key);
    }
  }
}

/**
 * For how many ms after the store answered `result` (at `cost`) the same request gets the
 * same answer but for resetMs and retryAfterMs counted down; 0: only at that instant.
 * Nothing is charged meanwhile, so every algorithm's budget only grows back; on that:
 *
 * - A denying policy keeps denying until retryAfterMs, and its resetMs and retryAfterMs
 *   (the times to full and to enough, a block's end included) fall by the time elapsed;
 *   but for a consume once a block ends (see Denial.blocks).
 *   `remaining` is whole and only grows, and stays below `cost` while denying; so when it
 *   is `cost - 1` already, it stays so to the end. A fixed window's holds anyway: its count
 *   changes only with the window, which is when its denial ends (without a block).
 * - An admitting policy (another denied) stays as it is when full: nothing to replenish.
 *   A fixed window's count holds to the window's end, which is its resetMs.
 * - The count-down is exact when the values are whole ms: the store's own arithmetic on
 *   whole-ms times and windows then gives whole numbers exactly, and so does subtraction.
 *   Fractions (a token bucket 3/1 s refills a token every 333.3 ms) would differ in the
 *   last bits of a double: those are asked again.
 */
function horizon(result: PolicyResult, policy: ResolvedPolicy, cost: number): number {
  const fixedWindow = policy.algorithm === 'fixed-window';
  if (result.allowed && result.remaining === result.capacity && result.resetMs === 0) {
    return Infinity;
  }
  if (!Number.isInteger(result.resetMs) || !Number.isInteger(result.retryAfterMs)) return 0;
  if (!result.allowed) {
    const holds = result.remaining === cost - 1 || (fixedWindow && policy.blockMs === 0);
    return holds ? result.retryAfterMs : 0;
  }
  return fixedWindow ? result.resetMs : 0;
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

function sameElements<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
