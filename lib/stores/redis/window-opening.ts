import type { StoreDecision } from '../../interfaces/rate-limit-store.interface.js';

/** How many outcomes the choice remembers, as a count saturating at both ends. */
const SPAN = 32;

/**
 * Which opening of lua/fixed-window-first.lua one lone fixed window's route sends: charged
 * first (INCRBY), cheapest on a key already in its window, or written first (SET ... NX GET),
 * cheapest on a key new in it. Both answer alike whatever Redis holds, so the choice costs at
 * most one call, never an answer; it follows what the route's recent decisions found, read
 * off their replies: an admission leaving `limit - cost` means the window held nothing
 * before. A route of returning clients keeps charging first, one of new clients each
 * decision (a signup form, a crawler) writes first, and no key is remembered.
 */
export class WindowOpening<Script> {
  /** Recent new keys less recent present ones, within [0, SPAN]. */
  private freshness = 0;
  /** The written-first form of the route's script, made when first sent. */
  written: Script | undefined;

  /** Whether most recent decisions found their key new in its window. */
  get writesFirst(): boolean {
    return this.freshness > SPAN / 2;
  }

  /** What a decision of a policy of `limit` at `cost` found. */
  saw({ allowed, verdicts }: StoreDecision, limit: number, cost: number): void {
    if (allowed && verdicts[0].remaining === limit - cost) {
      if (this.freshness < SPAN) this.freshness++;
    } else if (this.freshness > 0) {
      this.freshness--;
    }
  }
}
