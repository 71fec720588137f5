/**
 * The embedded store's port of one `lua/` script, step for step and operation for
 * operation, so both stores compute the same doubles; the differential test holds them to it.
 */
export interface MemoryAlgorithm<State, Verdict extends MemoryVerdict> {
  check(state: State | undefined, now: number, p: MemoryPolicy): Verdict;
  /** Charges p.cost: returns the new state and its lifetime in ms, updating remaining/reset. */
  commit(now: number, p: MemoryPolicy, verdict: Verdict): { state: State; ttlMs: number };
  /**
   * Mirrors lua/give-back.lua: p.cost units given back to a state, for the charge that took
   * effect at `chargedAt` (RefundRequest.chargedAt); the new state and its lifetime in ms,
   * or undefined when nothing changes.
   */
  giveBack(
    state: State,
    now: number,
    p: MemoryPolicy,
    chargedAt: number | undefined,
  ): { state: State; ttlMs: number } | undefined;
}

export interface MemoryPolicy {
  readonly limit: number;
  readonly window: number;
  readonly burst: number;
  readonly cost: number;
}

export interface MemoryVerdict {
  allowed: boolean;
  remaining: number;
  reset: number;
  retry: number;
  delay: number;
}
