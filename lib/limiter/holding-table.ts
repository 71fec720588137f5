import type { GiveBackRequest } from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import { EndQueue } from './end-queue.js';

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

/** setTimeout's longest wait: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How a pod's leases read time. */
export interface LeaseClock {
  /** Now in the holder's clock: the app's (local or a function), else this process's monotonic one. */
  readonly now: () => number;
  /** Whether `now` is the store's own clock (the app's, sent with every decision). */
  readonly appClock: boolean;
  /**
   * Whether `now` runs with real time, so that a timer can wait for a lease's end: not a
   * virtual clock, whose time moves only as the simulation says (seen on each decision).
   */
  readonly realTime: boolean;
}

/** What this pod holds of one policy's budget for one client key. */
export class Holding {
  /** Charged in the store and not yet admitted here. */
  units = 0;
  /** The window index they were charged in (the windows; the store's clock). */
  window = 0;
  /** In the holder's clock: from then on the units may not be admitted here (the lease ended). */
  expiresAt = -Infinity;
  /** The store's remaining for the policy as of this pod's last store call on it. */
  storeRemaining = 0;
  /** When the policy is full again, as of that call, in the holder's clock. */
  resetAt = 0;
  /**
   * Bumped when a new lease replaces the units or a reset drops them: units a request took
   * out go back only to their own lease.
   */
  generation = 0;
  /** Bumped when a reset drops the units: units taken out before go back nowhere. */
  resets = 0;
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

  /** Takes out `units` for a request until it is decided (HoldingTable.restore). */
  take(units: number): Taken {
    this.units -= units;
    const { generation, resets, window } = this;
    return { holding: this, generation, resets, window, units };
  }

  /** What the store said of the policy in a call sent at `now`. */
  known(remaining: number, resetMs: number, now: number): void {
    this.storeRemaining = remaining;
    this.resetAt = now + resetMs;
  }

  /** Whether units held at `now` may still be admitted here. */
  valid(now: number): boolean {
    return now < this.expiresAt;
  }

  /**
   * Whether units held at `now` can still be used by the budget if given back: a window's
   * only while the lease lasts (it ends with the window), a bucket's always (the bucket
   * takes them back up to its capacity, so it never holds more than had they not been
   * leased).
   */
  returnable(now: number): boolean {
    return this.policy.algorithm === 'token-bucket' || this.valid(now);
  }
}

/** Units a request took from a holding, with the lease they came from. */
export interface Taken {
  readonly holding: Holding;
  readonly generation: number;
  readonly resets: number;
  /** The window index they were charged in. */
  readonly window: number;
  readonly units: number;
}

/** A holding's units as of one lease: they go back at its end unless replaced before. */
interface LeaseEnd {
  readonly holding: Holding;
  readonly generation: number;
}

/**
 * The holdings of one pod, by client key then policy, bounded (MAX_CLIENTS). A client's
 * holdings are few (one per leased policy of its routes): a short list, searched by key suffix.
 */
export class HoldingTable {
  private readonly clients = new Map<string, Holding[]>();
  /** Token-bucket leases by their end: what they still hold then goes back (see endLeases). */
  private readonly ends = new EndQueue<LeaseEnd>();
  /** The one timer waiting for the earliest of `ends`, on a real-time clock; and its time. */
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(
    private readonly giveBack: (request: GiveBackRequest) => Promise<number>,
    private readonly storeKey: (clientKey: string, policy: ResolvedPolicy) => string,
    private readonly ttlFloorMs: number,
    private readonly clock: LeaseClock,
  ) {}

  /**
   * The holding of `policy` for `clientKey`, created if new. Leases ended by `now` give
   * back what they still hold that the budget can use, and drop the rest.
   */
  get(clientKey: string, policy: ResolvedPolicy, now: number): Holding {
    if (this.ends.next <= now) this.endLeases(now);
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
      if (holding.units > 0 && !holding.valid(now)) this.end(holding, now);
      return holding;
    }
    const holding = new Holding(clientKey, policy, this.clock.appClock);
    holdings.push(holding);
    return holding;
  }

  /**
   * A new lease on `holding` (Holding.renew). What a token bucket's holds at its end goes
   * back then, even if no request comes: the bucket can use it from then on.
   */
  renew(holding: Holding, units: number, window: number, now: number, endsInMs: number): void {
    // Units restored to the lease this one replaces, by requests denied meanwhile: restored
    // anew, as units of a replaced lease.
    const left = holding.units > 0 ? holding.take(holding.units) : undefined;
    holding.renew(units, window, now, endsInMs);
    if (left) this.restore(left);
    // Even with no unit left now: a request denied later may put some back.
    if (holding.policy.algorithm !== 'token-bucket') return;
    this.ends.push(holding.expiresAt, { holding, generation: holding.generation });
    this.wake(now);
  }

  /**
   * Units a request took and did not use: they are the pod's again, unless a reset dropped
   * their budget meanwhile. Back in their lease; if a new lease replaced it meanwhile, a
   * bucket's go back to the store (the new lease ends later than theirs), a window's join the
   * new lease when it is of the same window (the same end), else their window has ended. An
   * ended lease's go back at once.
   */
  restore({ holding, generation, resets, window, units }: Taken): void {
    if (units === 0 || holding.resets !== resets) return;
    const now = this.clock.now();
    if (holding.generation !== generation) {
      const bucket = holding.policy.algorithm === 'token-bucket';
      if (bucket) void this.send(holding, units, window, now);
      if (bucket || holding.window !== window) return;
    }
    holding.units += units;
    if (!holding.valid(now)) this.end(holding, now);
  }

  /** Drops the holdings of these policies for `clientKey`, giving nothing back (see reset). */
  forget(clientKey: string, policies: readonly ResolvedPolicy[]): void {
    const holdings = this.clients.get(clientKey);
    if (holdings === undefined) return;
    for (const holding of holdings) {
      if (!policies.some((policy) => policy.keySuffix === holding.policy.keySuffix)) continue;
      holding.units = 0;
      holding.generation++;
      holding.resets++;
    }
  }

  /** Gives back every unit held that the budget can still use (at close), and forgets them all. */
  async giveBackAll(now: number): Promise<void> {
    const returns: Promise<unknown>[] = [];
    for (const holdings of this.clients.values()) {
      for (const holding of holdings) {
        const sent = this.return(holding, now);
        if (sent) returns.push(sent);
      }
    }
    this.clients.clear();
    this.ends.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    await Promise.all(returns);
  }

  /** Every lease in `ends` ended by `now` gives back what it still holds. */
  private endLeases(now: number): void {
    while (this.ends.next <= now) {
      const { holding, generation } = this.ends.pop()!;
      if (holding.generation === generation) this.end(holding, now);
    }
  }

  /** An ended lease: its units go back if the budget can use them, else they are dropped. */
  private end(holding: Holding, now: number): void {
    if (this.return(holding, now) === undefined) holding.units = 0;
  }

  /** Arms the timer for the earliest lease end, unless it waits for that already or earlier. */
  private wake(now: number): void {
    const at = this.ends.next;
    if (!this.clock.realTime || at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    // Unref'd: a pending give-back keeps no process alive (the app's close gives back all).
    this.timer = setTimeout(this.onTimer, Math.min(MAX_TIMER_MS, Math.max(0, at - now)));
    this.timer.unref();
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    this.endLeases(now);
    this.wake(now);
  };

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

  /**
   * Gives back a holding's units if the budget can still use them; a failure, even one the
   * store throws at once (closed, disconnected), loses only them.
   */
  private return(holding: Holding, now: number): Promise<unknown> | undefined {
    const { units } = holding;
    if (units === 0 || !holding.returnable(now)) return undefined;
    // The generation stays: units a request in flight took before go back to this lease.
    holding.units = 0;
    return this.send(holding, units, holding.window, now);
  }

  /** Gives back `units` of `holding`'s policy charged in `window`; a failure loses only them. */
  private send(holding: Holding, units: number, window: number, now: number): Promise<unknown> {
    const request: GiveBackRequest = {
      key: this.storeKey(holding.clientKey, holding.policy),
      policy: holding.policy,
      units,
      window,
      // The app's clock is the store's: the give-back is judged at this instant. Redis's own
      // is read by the script.
      now: this.clock.appClock ? now : undefined,
      ttlFloorMs: this.ttlFloorMs,
    };
    try {
      return this.giveBack(request).catch(() => undefined);
    } catch {
      return Promise.resolve();
    }
  }
}
