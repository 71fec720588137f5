import type { GiveBackRequest } from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/**
 * Client keys whose holdings a pod keeps at most; past this, those of the client the sweep
 * has reached are given back and forgotten. Idle clients are swept as new ones come.
 */
const MAX_CLIENTS = 10_000;

/**
 * With Redis's clock, a lease's end is known as "so many ms after the script ran", which
 * ran after this pod read its own clock: counted from that reading, the end falls no later
 * than Redis's. End it 1 ms early (the scripts read TIME in whole ms) and 0.1% early (NTP
 * slews a clock by at most 0.05%), as the deny cache does.
 */
const redisClockMargin = (ms: number) => 1 + ms / 1_000;

/** What this pod holds of one policy's budget for one client key. */
export class Holding {
  /** Charged in the store and not yet admitted here. */
  units = 0;
  /** The window index they were charged in (the windows; the store's clock). */
  window = 0;
  /** In the holder's clock: from then on the units are the budget's no longer. */
  expiresAt = -Infinity;
  /** The store's remaining for the policy as of this pod's last store call on it. */
  storeRemaining = 0;
  /** When the policy is full again, as of that call, in the holder's clock. */
  resetAt = 0;
  /** Bumped whenever the units are replaced: units taken out before go back only to their own. */
  generation = 0;
  /** A store call taking a lease here is under way: requests meanwhile wait for its grant. */
  refill: Promise<unknown> | undefined;

  constructor(
    readonly clientKey: string,
    public policy: ResolvedPolicy,
    private readonly appClock: boolean,
  ) {}

  /** A new lease: `units` left of it after the request that took it, ending `endsInMs` after `now`. */
  renew(units: number, window: number, now: number, endsInMs: number): void {
    this.generation++;
    this.units = units;
    this.window = window;
    this.expiresAt = now + endsInMs - (this.appClock ? 0 : redisClockMargin(endsInMs));
  }

  /** What the store said of the policy in a call sent at `now`. */
  known(remaining: number, resetMs: number, now: number): void {
    this.storeRemaining = remaining;
    this.resetAt = now + resetMs;
  }

  /** Whether units held at `now` are still the budget's. */
  valid(now: number): boolean {
    return now < this.expiresAt;
  }

  /** Drops the units if the lease has ended. */
  expire(now: number): void {
    if (this.units > 0 && !this.valid(now)) {
      this.units = 0;
      this.generation++;
    }
  }
}

/**
 * The holdings of one pod, by client key then policy, bounded (MAX_CLIENTS). A client's
 * holdings are few (one per leased policy of its routes): a short list, searched by key suffix.
 */
export class HoldingTable {
  private readonly clients = new Map<string, Holding[]>();

  constructor(
    private readonly giveBack: (request: GiveBackRequest) => Promise<number>,
    private readonly storeKey: (clientKey: string, policy: ResolvedPolicy) => string,
    private readonly ttlFloorMs: number,
    private readonly appClock: boolean,
  ) {}

  /** The holding of `policy` for `clientKey`, its ended lease dropped; created if new. */
  get(clientKey: string, policy: ResolvedPolicy, now: number): Holding {
    let holdings = this.clients.get(clientKey);
    if (holdings === undefined) {
      this.sweep(now);
      holdings = [];
      this.clients.set(clientKey, holdings);
    }
    for (let i = 0; i < holdings.length; i++) {
      const holding = holdings[i];
      if (holding.policy.keySuffix !== policy.keySuffix) continue;
      holding.policy = policy;
      holding.expire(now);
      return holding;
    }
    const holding = new Holding(clientKey, policy, this.appClock);
    holdings.push(holding);
    return holding;
  }

  /** Drops the holdings of these policies for `clientKey`, giving nothing back (see reset). */
  forget(clientKey: string, policies: readonly ResolvedPolicy[]): void {
    const holdings = this.clients.get(clientKey);
    if (holdings === undefined) return;
    for (const holding of holdings) {
      if (!policies.some((policy) => policy.keySuffix === holding.policy.keySuffix)) continue;
      holding.units = 0;
      holding.generation++;
    }
  }

  /** Gives back every unit held that is still the budget's (at close), and forgets them all. */
  async giveBackAll(now: number): Promise<void> {
    const returns: Promise<unknown>[] = [];
    for (const holdings of this.clients.values()) {
      for (const holding of holdings) {
        const sent = this.return(holding, now);
        if (sent) returns.push(sent);
      }
    }
    this.clients.clear();
    await Promise.all(returns);
  }

  /**
   * Before a new client is added, looks at the client first in line: forgets it if none of
   * its holdings holds anything or waits on the store, gives back and forgets it past
   * MAX_CLIENTS, else sends it to the back of the line, so that the next sweep looks at
   * another.
   */
  private sweep(now: number): void {
    const oldest = this.clients.entries().next().value;
    if (oldest === undefined) return;
    const [clientKey, holdings] = oldest;
    const idle = holdings.every((h) => h.refill === undefined && (h.units === 0 || !h.valid(now)));
    if (!idle && this.clients.size < MAX_CLIENTS) {
      this.clients.delete(clientKey);
      this.clients.set(clientKey, holdings);
      return;
    }
    for (const holding of holdings) void this.return(holding, now);
    this.clients.delete(clientKey);
  }

  /** Gives back a holding's units if they are still the budget's; a failure loses only them. */
  private return(holding: Holding, now: number): Promise<unknown> | undefined {
    const { units } = holding;
    if (units === 0 || !holding.valid(now)) return undefined;
    holding.units = 0;
    holding.generation++;
    return this.giveBack({
      key: this.storeKey(holding.clientKey, holding.policy),
      policy: holding.policy,
      units,
      window: holding.window,
      // The app's clock is the store's: the give-back is judged at this instant. Redis's own
      // is read by the script.
      now: this.appClock ? now : undefined,
      ttlFloorMs: this.ttlFloorMs,
    }).catch(() => undefined);
  }
}
