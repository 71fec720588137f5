import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';
import type {
  DecisionMode,
  GiveBackRequest,
  LeaseGrant,
  LeaseTerms,
} from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import { Holding, HoldingTable, type LeaseClock, type Taken } from './holding-table.js';

/**
 * A store call for some of a request's policies (RateLimiter's), with lease terms, or none
 * when it leases nothing and gives nothing back: then it is an exact decision.
 */
export type LeaseAsk = (
  mode: DecisionMode,
  clientKeys: readonly string[],
  policies: readonly ResolvedPolicy[],
  costs: readonly number[],
  now: number | undefined,
  terms: LeaseTerms | undefined,
) => Promise<{ decision: RateLimitDecision; grant: LeaseGrant | undefined }>;

/**
 * Leased quotas (docs/leases.md): per policy and client key, the units of the shared budget
 * this pod has already charged in the store and not yet admitted. A request every leased
 * policy of which this pod can pay from what it holds is admitted here, without a store
 * call; otherwise the policies it cannot pay go to the store in one atomic call that takes
 * a new lease for each leased one (the store decides, so nothing is admitted that the store
 * would not), while those it could pay stay reserved: admitted only if the store admits the
 * rest, given back to the pod's holding otherwise (a denied request is charged to none).
 * One lease call at a time per holding: requests that arrive meanwhile wait for its grant
 * instead of each asking the store.
 */
export class LeaseHolder {
  private readonly table: HoldingTable;

  constructor(
    private readonly ask: LeaseAsk,
    private readonly clock: LeaseClock,
    giveBack: (request: GiveBackRequest) => Promise<number>,
    storeKey: (clientKey: string, policy: ResolvedPolicy) => string,
    ttlFloorMs: number,
  ) {
    this.table = new HoldingTable(giveBack, storeKey, ttlFloorMs, clock);
  }

  /**
   * Whether this request goes through leases: some policy leases, and no policy is a shadow
   * or blocks (those need the store's own decision on every request). With policies keyed by
   * several clients, a Cluster decides the request in several calls, one per hash tag
   * (RedisStore's leaseAcrossSlots): a leased policy must then cost no more than its lease,
   * so that a call that charges it takes a lease, which stays with the pod when another tag
   * denies the request.
   */
  static applies(
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): boolean {
    let leased = false;
    let beyondLease = false;
    let oneClient = true;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i];
      const cost = costs[i];
      if (policy.shadow || policy.blockMs > 0) return false;
      // A malformed cost is refused on the direct path (400), as without a lease.
      if (!Number.isSafeInteger(cost) || cost <= 0) return false;
      if (policy.lease > 0) leased = true;
      if (policy.lease > 0 && cost > policy.lease) beyondLease = true;
      if (clientKeys[i] !== clientKeys[0]) oneClient = false;
    }
    return leased && (oneClient || !beyondLease);
  }

  decide(
    mode: DecisionMode,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    const now = this.clock.now();
    const holdings = new Array<Holding | undefined>(policies.length);
    let fromStore = 0;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i];
      if (policy.lease === 0) {
        fromStore++;
        continue;
      }
      const holding = this.table.get(clientKeys[i], policy, now);
      holdings[i] = holding;
      // What the pod holds is charged budget: a request it covers is admitted here. Else the
      // store decides, what the pod holds going towards the request (a new lease only where
      // the cost is within the lease).
      if (holding.units >= costs[i]) continue;
      // Another request of this pod is taking a lease here: its grant may pay for this one.
      if (holding.refill && mode === 'consume' && policy.lease >= costs[i]) {
        const retry = () => this.decide(mode, clientKeys, policies, costs);
        return holding.refill.then(retry, retry);
      }
      fromStore++;
    }
    if (fromStore === 0)
      return Promise.resolve(this.decideHere(mode, policies, costs, holdings, now));
    return this.decideWithStore(mode, clientKeys, policies, costs, holdings, now);
  }

  /**
   * Units of an admitted request given back to what this pod holds of a window's budget,
   * which then admits them again: only while the lease runs and is of `window`, the window
   * charged (its count is what the units were charged to either way; undefined: the
   * current one, which a running lease is of). False: the store must
   * take them back. A token bucket's always go to the store, which caps them at its
   * capacity: held by the pod beside a bucket refilled meanwhile, they could make a burst
   * larger than the bucket allows.
   */
  refund(
    clientKey: string,
    policy: ResolvedPolicy,
    units: number,
    window: number | undefined,
  ): boolean {
    if (policy.lease === 0 || policy.algorithm === 'token-bucket') return false;
    const now = this.clock.now();
    const holding = this.table.get(clientKey, policy, now);
    if (!holding.valid(now) || (window !== undefined && holding.window !== window)) return false;
    holding.units += units;
    return true;
  }

  /** Drops what this pod holds of these policies for `clientKey`: their budget was reset. */
  forget(clientKey: string, policies: readonly ResolvedPolicy[]): void {
    this.table.forget(clientKey, policies);
  }

  /** Gives back every unit held that is still the budget's (on app close). */
  close(): Promise<void> {
    return this.table.giveBackAll(this.clock.now());
  }

  /** Every leased policy paid from what this pod holds: no store call. */
  private decideHere(
    mode: DecisionMode,
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    holdings: readonly (Holding | undefined)[],
    now: number,
  ): RateLimitDecision {
    const results = new Array<PolicyResult>(policies.length);
    for (let i = 0; i < policies.length; i++) {
      const holding = holdings[i]!;
      if (mode === 'consume') holding.units -= costs[i];
      results[i] = heldResult(policies[i], holding, now);
    }
    return { allowed: true, results, leased: true };
  }

  /**
   * Some policies go to the store: those not leased, those costing more than their lease,
   * and the leased ones this pod holds too little of, which take a lease. What the pod holds
   * of a policy it asks about goes towards the request.
   */
  private async decideWithStore(
    mode: DecisionMode,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    holdings: readonly (Holding | undefined)[],
    now: number,
  ): Promise<RateLimitDecision> {
    const consume = mode === 'consume';
    const reserved = new Array<Taken | undefined>(policies.length);
    const asked: number[] = [];
    const sizes: number[] = [];
    const held: number[] = [];
    const heldWindows: number[] = [];
    const given: (Taken | undefined)[] = [];
    for (let i = 0; i < policies.length; i++) {
      const holding = holdings[i];
      if (holding && holding.units >= costs[i]) {
        reserved[i] = holding.take(consume ? costs[i] : 0);
        continue;
      }
      asked.push(i);
      sizes.push(holding && policies[i].lease >= costs[i] ? policies[i].lease : 0);
      held.push(holding ? holding.units : 0);
      heldWindows.push(holding ? holding.window : 0);
      // What is held goes towards this request: it stays with the pod if the store denies.
      given.push(holding && consume ? holding.take(holding.units) : undefined);
    }
    const leasing = sizes.some((size) => size > 0) || held.some((units) => units > 0);
    const call = this.ask(
      mode,
      asked.map((i) => clientKeys[i]),
      asked.map((i) => policies[i]),
      asked.map((i) => costs[i]),
      this.clock.appClock ? now : undefined,
      leasing ? { sizes, held, heldWindows } : undefined,
    );
    if (consume) {
      asked.forEach((i, j) => {
        if (sizes[j] > 0) holdings[i]!.refill = call;
      });
    }
    let answer: Awaited<typeof call>;
    try {
      answer = await call;
    } catch (error) {
      for (const part of [...reserved, ...given]) if (part) this.table.restore(part);
      throw error;
    } finally {
      if (consume)
        for (const i of asked) if (holdings[i]?.refill === call) holdings[i]!.refill = undefined;
    }
    const { decision, grant } = answer;
    const results = new Array<PolicyResult>(policies.length);
    asked.forEach((i, j) => {
      const result = decision.results[j];
      const holding = holdings[i];
      if (holding === undefined) {
        results[i] = result;
        return;
      }
      // A lease the store charged is the pod's, what it gave towards it included, less the
      // request's cost unless the request was denied (by another hash tag's call: see
      // applies). Without one, what the pod gave went towards an admission the store
      // charged, else it is the pod's again.
      const granted = grant === undefined ? 0 : grant.units[j];
      if (granted > 0) {
        const units = granted - (decision.allowed ? costs[i] : 0);
        this.table.renew(holding, units, grant!.windows[j], now, grant!.endsInMs[j]);
      } else if (!(decision.allowed && grant !== undefined) && given[j]) {
        this.table.restore(given[j]);
      }
      holding.known(result.remaining, result.resetMs, now);
      results[i] = {
        ...result,
        remaining: Math.min(result.capacity, result.remaining + holding.units),
      };
    });
    for (let i = 0; i < policies.length; i++) {
      const part = reserved[i];
      if (part === undefined) continue;
      if (!decision.allowed) this.table.restore(part);
      results[i] = heldResult(policies[i], part.holding, this.clock.now());
    }
    return {
      allowed: decision.allowed,
      results,
      ...(decision.cached && { cached: true as const }),
    };
  }
}

/**
 * A leased policy's result from what this pod knows: remaining as of its last store call
 * less what it admitted since (the units it still holds), the reset then counted down.
 */
function heldResult(policy: ResolvedPolicy, holding: Holding, now: number): PolicyResult {
  return {
    policy: policy.name,
    allowed: true,
    limit: policy.limit,
    window: policy.windowMs,
    capacity: policy.maxCost,
    remaining: Math.min(policy.maxCost, holding.storeRemaining + holding.units),
    resetMs: Math.max(0, holding.resetAt - now),
    retryAfterMs: 0,
    delayMs: 0,
  };
}
