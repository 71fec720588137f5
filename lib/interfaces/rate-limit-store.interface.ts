import type { ResolvedPolicy } from './resolved-policy.interface.js';

/** 'consume' charges the request if every policy admits it; 'peek' only tells. */
export type DecisionMode = 'consume' | 'peek';

/** One request put to the store: policy i is decided on keys[i] at costs[i]. */
export interface DecideRequest {
  readonly mode: DecisionMode;
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  /** Epoch ms from the app's clock; undefined lets the store use its own (Redis TIME). */
  readonly now: number | undefined;
  /** Least key lifetime in real ms: virtual clocks may run slower than real time. */
  readonly ttlFloorMs: number;
  /**
   * Epoch ms on the store's real clock (Redis TIME; Date.now() for the embedded store)
   * after which the caller no longer waits for the answer: a decision that starts later
   * charges nothing and comes back `stale`. Undefined: no limit.
   */
  readonly wantedUntil?: number;
  /**
   * Set by a pod taking leases (docs/leases.md): the store charges each leased policy a lease
   * instead of the cost alone and says so in `StoreDecision.leased`. A store that does not
   * lease (the embedded one) decides the request as if it were unset.
   */
  readonly lease?: LeaseTerms;
}

/** What a leasing pod asks of each policy of a request, by position. */
export interface LeaseTerms {
  /** The most units to charge to the pod's lease, the cost included; 0: not leased. */
  readonly sizes: readonly number[];
  /** Units the pod holds (fewer than the cost) and gives back towards this request. */
  readonly held: readonly number[];
  /** The window index the held units were charged in (the windows; ignored for buckets). */
  readonly heldWindows: readonly number[];
}

/** What a store leased, by policy position (StoreDecision.leased). */
export interface LeaseGrant {
  /** Units charged to the pod, the request's cost included; 0 where not leased or denied. */
  readonly units: readonly number[];
  /** The window index they were charged in (on the store's clock). */
  readonly windows: readonly number[];
  /** In how many ms, from the decision's instant, the lease ends. */
  readonly endsInMs: readonly number[];
}

/** Units a pod gives back to one policy's budget (RateLimitStore.giveBack). */
export interface GiveBackRequest {
  readonly key: string;
  readonly policy: ResolvedPolicy;
  readonly units: number;
  /** The window index they were charged in (LeaseGrant.windows). */
  readonly window: number;
  readonly now: number | undefined;
  readonly ttlFloorMs: number;
}

/**
 * A request's charge given back to its policies (RateLimitStore.refund): policy i gets
 * `units[i]` back on keys[i], never beyond what its algorithm could hold.
 */
export interface RefundRequest {
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly units: readonly number[];
  /**
   * Per policy, when its charge took effect, in epoch ms on the decisions' clock: any
   * instant of the window charged (the windows, which give back only in that window), the
   * time of the entries the charge added (the sliding log), the request's start, i.e. the
   * decision's instant plus its delay (the leaky bucket); undefined: the latest charge (this
   * window, the newest entries, the last slot in the queue). The token bucket needs none.
   */
  readonly chargedAt: readonly (number | undefined)[];
  /** Epoch ms from the app's clock; undefined: the store's own (Redis TIME). */
  readonly now: number | undefined;
  readonly ttlFloorMs: number;
}

/** A store's answer for one policy of a request (the limiter adds the policy's name and sizes). */
export interface PolicyVerdict {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  readonly delayMs: number;
}

/** A store's answer to a DecideRequest: all policies admitted or not, and each one's verdict. */
export interface StoreDecision {
  readonly allowed: boolean;
  /** One per policy; empty when `stale`. */
  readonly verdicts: readonly PolicyVerdict[];
  /** Set when the decision started after `wantedUntil`: nothing was read or charged. */
  readonly stale?: true;
  /** Set by failureMode 'local': decided in this process at a share of each limit, not by the store. */
  readonly local?: true;
  /** Set when the store leased (DecideRequest.lease) and admitted. */
  readonly leased?: LeaseGrant;
}

/** What both stores answer when a decision starts after `wantedUntil`. */
export const STALE_DECISION: StoreDecision = { allowed: false, verdicts: [], stale: true };

/**
 * Where budgets live. Small on purpose: a third store (Valkey functions, a Redis module)
 * slots in without touching the guard or the limiter.
 */
export interface RateLimitStore {
  /**
   * Decides all policies of one request atomically: all are charged, or none. A failure
   * may come as a rejection or a synchronous throw; the limiter treats both alike.
   */
  decide(request: DecideRequest): Promise<StoreDecision>;
  /** Forgets the budgets held under these keys. */
  reset(keys: readonly string[]): Promise<void>;
  /** Releases what the store owns (timers, connections it created). */
  close(): Promise<void>;
  /**
   * Optional, for a store of several nodes (Redis Cluster): which node decides on these
   * keys now (its address), or undefined for keys on several nodes. A node that stalls then
   * opens only its own circuit breaker; without it the store has one breaker.
   */
  nodeOf?(keys: readonly string[]): string | undefined;
  /**
   * Optional, with nodeOf: the clock of the one node named as nodeOf names it, epoch ms
   * (Redis TIME of that master). While a node's circuit breaker is open the limiter asks it
   * in the background, and its first answer closes the breaker; without it, requests for
   * the node's keys probe it, one every `halfOpenAfter`.
   */
  nodeTime?(node: string): Promise<number>;
  /**
   * Optional: the store's real clock now, epoch ms (Redis TIME), by which `wantedUntil` is
   * judged. The limiter samples it every few seconds to learn the store's offset from this
   * process; a store without it gets no `wantedUntil`.
   */
  time?(): Promise<number>;
  /**
   * Optional: gives back leased units that are still the budget's (DecideRequest.lease);
   * resolves to how many went back. A store without it decides leased policies directly.
   */
  giveBack?(request: GiveBackRequest): Promise<number>;
  /**
   * Optional: why the store cannot take commands now, in words without addresses (e.g.
   * 'Redis connection is reconnecting'), or undefined when it can. Read by health checks
   * (`RateLimiter.storeStatus()`), never on a decision's path.
   */
  whyNotReady?(): string | undefined;
  /**
   * Optional: gives a charge back to the request's policies, all at once (see
   * RefundRequest); a key without state is left alone. Without it, RateLimiter.refund and
   * policies that count by outcome are refused at start.
   */
  refund?(request: RefundRequest): Promise<void>;
  /**
   * Optional: calls `listener` each time the store's connection becomes ready to take
   * commands (connected again after an outage); returns what stops it. The limiter then
   * decides on the store again at once, without waiting for a probe to be answered.
   */
  onReady?(listener: () => void): () => void;
}
