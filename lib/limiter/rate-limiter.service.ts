import {
  BadRequestException,
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { chargedAt, chargedWindow } from './charged-at.js';
import { clientTag, policyKey } from '../stores/store-keys.js';
import { DenyCache } from './deny-cache.js';
import { type LeaseAsk, LeaseHolder } from './lease-holder.js';
import { RATE_LIMIT_OPTIONS, RATE_LIMIT_STORE } from '../rate-limit.constants.js';
import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';
import type { FailureMode, RateLimitPolicy } from '../interfaces/rate-limit-policy.interface.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import { resolvePolicies } from '../config/resolved-policy.js';
import { ResilientStore } from '../resilience/resilient-store.js';
import { ThrottledLog } from '../observability/throttled-log.js';
import type {
  DecideRequest,
  DecisionMode,
  LeaseGrant,
  LeaseTerms,
  RateLimitStore,
  StoreDecision,
} from '../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import type { RateLimitStoreStatus } from '../interfaces/rate-limit-store-status.interface.js';
import { notDecidingReason } from '../resilience/store-health.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import { RedisStore } from '../stores/redis/redis.store.js';

/**
 * With a virtual clock, a key's need (in virtual ms) says nothing about real time, in which
 * Redis expires keys; keep such keys at least this long so a slow simulation loses nothing.
 */
const VIRTUAL_CLOCK_TTL_FLOOR_MS = 60_000;

/**
 * With Redis TIME, a denial is timed by Redis's clock but remembered by this process's
 * monotonic one: end it 1 ms early (the scripts read TIME in whole ms) and 0.1% early
 * (NTP slews a clock by at most 0.05%), so it never outlasts Redis's own.
 */
const redisClockMargin = (ms: number) => 1 + ms / 1_000;
const noMargin = () => 0;

/**
 * The one place that decides: builds keys, applies the deadline and asks the store once for
 * all policies of a request. Injectable for programmatic use; the guard uses it too.
 */
@Injectable()
export class RateLimiter implements OnApplicationShutdown {
  private readonly now: (() => number) | undefined;
  /** Deadline, circuit breaker and local fallback in front of the store. */
  private readonly resilientStore: ResilientStore;
  private readonly ttlFloorMs: number;
  /** Policies passed to the service are resolved once per object, not per call. */
  private readonly resolved = new WeakMap<RateLimitPolicy, ResolvedPolicy>();
  /** Denials known to this instance (see DenyCache); off in dry runs. */
  private readonly denials: DenyCache | undefined;
  /** What consume and peek need of one policy or array argument, by that argument. */
  private readonly prepared = new WeakMap<RateLimitPolicy | RateLimitPolicy[], PreparedCall>();
  private readonly shadowLog: ThrottledLog;
  /**
   * The last call's store keys, with the client key and policies they were made of. A client
   * hammering a spent limit sends the same key again and again: its keys are reused, not
   * built anew, and the deny cache's lookup reads the hash V8 keeps in the reused string
   * instead of joining and hashing a new one.
   */
  private lastKeys: KeysOfCall | undefined;
  /** Leased quotas (docs/leases.md), on a store that leases; the embedded one decides directly. */
  private readonly leases: LeaseHolder | undefined;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    @Inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore,
  ) {
    const { clock } = options;
    this.now = clock === 'redis' ? undefined : clock === 'local' ? Date.now : clock;
    this.ttlFloorMs = typeof clock === 'function' ? VIRTUAL_CLOCK_TTL_FLOOR_MS : 0;
    const logger = new Logger('RateLimit');
    this.resilientStore = new ResilientStore(store, options, logger);
    this.shadowLog = new ThrottledLog(logger);
    if (options.denyCacheEntries > 0 && !options.dryRun) {
      this.denials = new DenyCache(
        options.denyCacheEntries,
        clock === 'redis' ? redisClockMargin : noMargin,
        clock !== 'redis',
      );
    }
    if (store.giveBack) {
      const giveBack = store.giveBack.bind(store);
      this.leases = new LeaseHolder(
        this.askForLease,
        {
          now: this.now ?? (() => performance.now()),
          appClock: this.now !== undefined,
          realTime: typeof clock !== 'function',
        },
        giveBack,
        (clientKey, policy) => policyKey(options.prefix, clientTag(clientKey), policy.keySuffix),
        this.ttlFloorMs,
      );
    }
  }

  /** Charges `cost` (default: the policy's numeric cost, else 1) if every policy admits it. */
  consume(
    key: string,
    policies: RateLimitPolicy | RateLimitPolicy[],
    cost?: number,
  ): Promise<RateLimitDecision> {
    return this.decideByKey('consume', key, policies, cost);
  }

  /** Says whether a request of `cost` would pass now; consumes nothing. */
  peek(
    key: string,
    policies: RateLimitPolicy | RateLimitPolicy[],
    cost?: number,
  ): Promise<RateLimitDecision> {
    return this.decideByKey('peek', key, policies, cost);
  }

  /** Forgets what `key` has used of these policies. */
  async reset(key: string, policies: RateLimitPolicy | RateLimitPolicy[]): Promise<void> {
    const tag = clientTag(key);
    const resolved = this.resolve(policies);
    const keys = resolved.map((policy) => policyKey(this.options.prefix, tag, policy.keySuffix));
    this.denials?.forget(keys);
    this.leases?.forget(key, resolved);
    await this.resilientStore.reset(keys);
  }

  /**
   * Names the routes whose failure mode is not the module's in the warnings of an outage,
   * so that they say what applies where (RateLimitModule tells it once routes are planned).
   */
  nameFailureModes(routes: ReadonlyMap<FailureMode, readonly string[]>): void {
    this.resilientStore.nameFailureModes(routes);
  }

  /**
   * Whether the store makes the decisions now, and if not why, from what this limiter has
   * seen of it: its last answer or failure, its circuit breakers, its client's connection.
   * Asks the store nothing. What `RateLimitHealthIndicator` reports. An extension.
   */
  storeStatus(): RateLimitStoreStatus {
    const reading = this.resilientStore.healthReading();
    const { failureMode } = this.options;
    const reason = notDecidingReason(reading, failureMode);
    return {
      deciding: reason === undefined,
      store:
        this.store instanceof RedisStore
          ? 'redis'
          : this.store instanceof MemoryStore
            ? 'embedded'
            : 'custom',
      reason,
      failureMode,
      failingSince: reading.failing?.since,
      breakerOpen: reading.breakerOpen,
      nodesWithBreakerOpen: reading.nodesWithBreakerOpen,
    };
  }

  /**
   * Gives `cost` units (default: each policy's numeric cost, else 1) back to every policy of
   * `key`, atomically: after a request `consume` charged turned out not to count (see the
   * policy option `count` for the guard's own). Never beyond what the algorithm could hold:
   * a bucket up to its capacity, a window's count down to zero and only in the current
   * window, the sliding log's newest entries removed, the leaky bucket's last slot freed if
   * not yet started. A key without state is left alone; units a pod leased go back to its
   * lease. Rejects as `reset` does when the store is unavailable.
   */
  async refund(
    key: string,
    policies: RateLimitPolicy | RateLimitPolicy[],
    cost?: number,
  ): Promise<void> {
    if (!this.store.refund) {
      throw new Error('RateLimiter.refund: the store in use cannot give units back (no refund)');
    }
    const call = this.prepare(policies);
    const units = cost === undefined ? call.costs : call.policies.map(() => cost);
    // Only for its check: a cost that is not a positive integer is refused as consume refuses it.
    call.policies.forEach((policy, i) => isBeyondCapacity(policy, units[i]));
    const clientKeys = call.policies.map(() => key);
    const latest = call.policies.map(() => undefined);
    await this.giveBack(clientKeys, call.policies, units, latest, latest);
  }

  /** Now on the decisions' clock as well as this process knows it (see Charge.instant). */
  storeNow(): number {
    return this.now?.() ?? this.resilientStore.storeTimeAt(performance.now()) ?? Date.now();
  }

  /**
   * Gives the policies at positions `which` of an admitted request their charge back, in
   * the window (or at the instant) it was charged: the guard's give-back for policies that
   * count by outcome. Rejects as `refund` does.
   */
  refundCharge(charge: Charge, which: readonly number[]): Promise<void> {
    const { clientKeys, policies, costs, decision, instant } = charge;
    const pick = <T>(values: readonly T[]) => which.map((i) => values[i]);
    const picked = pick(policies);
    const results = pick(decision.results);
    return this.giveBack(
      pick(clientKeys),
      picked,
      pick(costs),
      picked.map((policy, j) => chargedAt(policy, results[j], instant)),
      picked.map((policy, j) =>
        policy.lease > 0 ? chargedWindow(policy, results[j], instant) : undefined,
      ),
    );
  }

  /**
   * Units back to policies: a leased window's to what this pod holds while its lease runs in
   * the window charged (`windows`), every other in one store call.
   */
  private async giveBack(
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    units: readonly number[],
    at: readonly (number | undefined)[],
    windows: readonly (number | undefined)[],
  ): Promise<void> {
    const request = {
      keys: [] as string[],
      policies: [] as ResolvedPolicy[],
      units: [] as number[],
      chargedAt: [] as (number | undefined)[],
      now: this.now?.(),
      ttlFloorMs: this.ttlFloorMs,
    };
    const changed: string[] = [];
    for (let i = 0; i < policies.length; i++) {
      const key = policyKey(this.options.prefix, clientTag(clientKeys[i]), policies[i].keySuffix);
      changed.push(key);
      if (this.leases?.refund(clientKeys[i], policies[i], units[i], windows[i])) continue;
      request.keys.push(key);
      request.policies.push(policies[i]);
      request.units.push(units[i]);
      request.chargedAt.push(at[i]);
    }
    // A denial known here describes the budget before the refund, which can only admit
    // sooner after it; nor may one decided before it be remembered after.
    this.denials?.forget(changed);
    if (request.keys.length > 0) await this.resilientStore.refund(request);
  }

  /**
   * A limiter on the same store and options that reads time from `clock` (epoch ms), for
   * simulations that replay traffic on a virtual clock; `timeout` may be relaxed for them.
   * It listens to the store's connection and may hold leases until its
   * `onApplicationShutdown()` runs, which Nest calls only for the injected limiter: call it
   * when the simulation ends. An extension of the contract.
   */
  withClock(clock: () => number, options: { timeout?: number } = {}): RateLimiter {
    return new RateLimiter(
      { ...this.options, clock, timeout: options.timeout ?? this.options.timeout },
      this.store,
    );
  }

  /**
   * Decides one request on policies resolved beforehand (the guard resolves them at start),
   * policy i for client key clientKeys[i] at costs[i]. Not async: it is the hot path, and
   * one promise layer over the store's is all it adds.
   */
  decide(
    mode: DecisionMode,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    if (this.leases && LeaseHolder.applies(clientKeys, policies, costs)) {
      return this.leases.decide(mode, clientKeys, policies, costs);
    }
    return this.askStore(mode, clientKeys, policies, costs, false);
  }

  /** The lease holder's store call: askStore with lease terms, and what the store leased. */
  private readonly askForLease: LeaseAsk = async (
    mode,
    clientKeys,
    policies,
    costs,
    now,
    terms,
  ) => {
    const call: LeaseCall = { terms, grant: undefined };
    const decision = await this.askStore(mode, clientKeys, policies, costs, true, call, now);
    return { decision, grant: call.grant };
  };

  /** One store call for all `policies`, unless some are shadows not yet set apart. */
  private askStore(
    mode: DecisionMode,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    shadowsApart: boolean,
    lease?: LeaseCall,
    at?: number,
  ): Promise<RateLimitDecision> {
    const last = this.lastKeys;
    const known =
      last !== undefined &&
      sameElements(last.policies, policies) &&
      sameElements(last.clientKeys, clientKeys);
    // Sized up front: a push into an empty array reserves room for 16.
    const keys = known ? last.keys : new Array<string>(policies.length);
    let tag = '';
    let beyondCapacity = false;
    try {
      for (let i = 0; i < policies.length; i++) {
        if (policies[i].shadow && !shadowsApart) {
          return this.askStoreApart(mode, clientKeys, policies, costs);
        }
        if (isBeyondCapacity(policies[i], costs[i])) beyondCapacity = true;
        if (known) continue;
        // Policies keyed alike (the usual case) share one tag: encode it once.
        if (i === 0 || clientKeys[i] !== clientKeys[i - 1]) tag = clientTag(clientKeys[i]);
        keys[i] = policyKey(this.options.prefix, tag, policies[i].keySuffix);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    // Copies: the caller may change its arrays in place (decideByKey refills one per call).
    if (!known) this.lastKeys = { clientKeys: [...clientKeys], policies: [...policies], keys };
    const now = at ?? this.now?.();
    const askedAt = performance.now();
    // Known denials are answered here. A cost beyond capacity skips the cache both ways:
    // its answer must say so, and no time lifts it.
    const denials = beyondCapacity ? undefined : this.denials;
    let sentAt = 0;
    let generation = 0;
    if (denials) {
      sentAt = now ?? askedAt;
      // While nothing is denied (the usual case) no id is made, nor hashed.
      const known = denials.empty
        ? undefined
        : denials.lookup(denialId(keys), policies, costs, mode, sentAt);
      if (known) return Promise.resolve(known);
      generation = denials.current;
    }
    // A cost some policy can never admit is denied whatever the budgets hold: nothing is
    // charged, and the store is only asked (at a cost each policy can hold) what they hold.
    const request: LimiterRequest = {
      mode: beyondCapacity ? 'peek' : mode,
      keys,
      policies,
      costs: beyondCapacity ? costs.map((cost, i) => Math.min(cost, policies[i].maxCost)) : costs,
      now,
      ttlFloorMs: this.ttlFloorMs,
      requestedCosts: costs,
      beyondCapacity,
      sentAt,
      generation,
      lease: lease?.terms,
      leaseCall: lease,
    };
    return this.resilientStore.decide(request, askedAt, this.finish);
  }

  /**
   * The decision on `request` from the store's: one function for every call (its state is
   * in the request), so that no closure is made per call.
   */
  private readonly finish = (
    { allowed, verdicts, local, leased }: StoreDecision,
    request: LimiterRequest,
  ): RateLimitDecision => {
    if (request.leaseCall) request.leaseCall.grant = leased;
    const { keys, policies, requestedCosts: costs, beyondCapacity } = request;
    const results = new Array<PolicyResult>(verdicts.length);
    for (let i = 0; i < verdicts.length; i++) {
      const verdict = verdicts[i];
      const policy = policies[i];
      // Field by field, not spread: one object shape for every result.
      const policyBeyondCapacity = costs[i] > policy.maxCost;
      results[i] = {
        policy: policy.name,
        allowed: verdict.allowed && !policyBeyondCapacity,
        limit: policy.limit,
        window: policy.windowMs,
        capacity: policy.maxCost,
        remaining: verdict.remaining,
        resetMs: verdict.resetMs,
        retryAfterMs: policyBeyondCapacity ? Infinity : verdict.retryAfterMs,
        delayMs: verdict.delayMs,
      };
    }
    const decision: RateLimitDecision = { allowed: allowed && !beyondCapacity, results };
    // Only the store's own denials are known to hold: not the local fallback's. A cost
    // beyond capacity is not kept either (see askStore).
    const denials = beyondCapacity ? undefined : this.denials;
    if (denials && !local) {
      const { mode, sentAt, generation } = request;
      // A consume changes what the entries on its keys describe: by its charge, or by the
      // block a denial starts.
      if (mode === 'consume' && !denials.empty) denials.charged(keys);
      if (!decision.allowed) {
        const id = denialId(keys);
        denials.remember(id, keys, policies, costs, mode, sentAt, generation, decision);
      }
    }
    return decision;
  };

  /**
   * The store decides all policies of a call atomically, charging all or none; so each
   * shadow policy goes in a call of its own, sent alongside the enforced policies' call:
   * it is charged as if it were alone, and its denial neither blocks nor keeps any other
   * policy from charging. A store failure on any of the calls fails the decision.
   */
  private async askStoreApart(
    mode: DecisionMode,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    const enforced: number[] = [];
    const shadows: number[] = [];
    policies.forEach((policy, i) => (policy.shadow ? shadows : enforced).push(i));
    const decidePart = (part: number[]) =>
      this.askStore(
        mode,
        part.map((i) => clientKeys[i]),
        part.map((i) => policies[i]),
        part.map((i) => costs[i]),
        true,
      );
    const [kept, ...trials] = await Promise.all([
      enforced.length > 0 ? decidePart(enforced) : undefined,
      ...shadows.map((i) => decidePart([i])),
    ]);
    const results: PolicyResult[] = [];
    enforced.forEach((i, j) => (results[i] = kept!.results[j]));
    shadows.forEach((i, j) => {
      const result = trials[j]!.results[0];
      // A shadow policy never holds a request back.
      results[i] = { ...result, delayMs: 0, shadow: true };
      if (!result.allowed) {
        this.shadowLog.warn(
          `shadow policy "${result.policy}" would have denied ${clientKeys[i]} (not enforced)`,
        );
      }
    });
    return {
      allowed: kept?.allowed ?? true,
      results,
      ...(kept?.cached && { cached: true as const }),
    };
  }

  /** Not async: consume and peek are hot paths too. */
  private decideByKey(
    mode: DecisionMode,
    key: string,
    policies: RateLimitPolicy | RateLimitPolicy[],
    cost: number | undefined,
  ): Promise<RateLimitDecision> {
    let call: PreparedCall;
    try {
      call = this.prepare(policies);
    } catch (error) {
      return Promise.reject(error);
    }
    const count = call.policies.length;
    return this.decide(
      mode,
      call.clientKeys?.fill(key) ?? Array<string>(count).fill(key),
      call.policies,
      cost === undefined ? call.costs : Array<number>(count).fill(cost),
    );
  }

  /** The resolved policies and default costs of an argument, prepared on its first use. */
  private prepare(policies: RateLimitPolicy | RateLimitPolicy[]): PreparedCall {
    const known = this.prepared.get(policies);
    // An array may have changed since: it is prepared again if its elements did.
    if (known && (!Array.isArray(policies) || sameElements(known.sources, policies))) return known;
    const sources = Array.isArray(policies) ? [...policies] : [policies];
    const resolved = this.resolve(sources);
    const call: PreparedCall = {
      sources,
      policies: resolved,
      costs: resolved.map((policy) => (typeof policy.cost === 'number' ? policy.cost : 1)),
      clientKeys: resolved.some((policy) => policy.shadow)
        ? undefined
        : new Array<string>(resolved.length),
    };
    this.prepared.set(policies, call);
    return call;
  }

  private resolve(policies: RateLimitPolicy | RateLimitPolicy[]): ResolvedPolicy[] {
    const list = Array.isArray(policies) ? policies : [policies];
    const missing = list.filter((policy) => !this.resolved.has(policy));
    if (missing.length > 0) {
      resolvePolicies(list, {
        label: 'RateLimiter call',
        defaultScope: 'global',
        localShare: this.options.instances !== undefined,
        defaultAlgorithm: this.options.defaults.algorithm,
      }).forEach((resolved, i) => this.resolved.set(list[i], resolved));
    }
    return list.map((policy) => this.resolved.get(policy)!);
  }

  /**
   * Gives back the units this pod leased and has not used (waiting at most `timeout` for
   * the store), then releases what the resilient store holds (the local fallback's store).
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.leases) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>(
        (resolve) => (timer = setTimeout(resolve, this.options.timeout)),
      );
      await Promise.race([this.leases.close(), late]);
      clearTimeout(timer);
    }
    return this.resilientStore.close();
  }
}

/** An admitted request's charge, as the guard keeps it to give it back (refundCharge). */
export interface Charge {
  readonly clientKeys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  readonly decision: RateLimitDecision;
  /**
   * The decision's instant on the store's clock, as `storeNow()` read it once the decision
   * arrived: exact on the app's clock (unless it moved meanwhile), else late by up to a
   * round trip, which the windows' give-back makes up for (see chargedWindow).
   */
  readonly instant: number;
}

/** What the deny cache knows a request by: its keys. */
const denialId = (keys: readonly string[]) => (keys.length === 1 ? keys[0] : keys.join('\n'));

/**
 * A malformed cost is the caller's mistake (400); one the policy can never admit is a
 * denial that no retry can turn around.
 */
function isBeyondCapacity(policy: ResolvedPolicy, cost: number): boolean {
  if (!Number.isSafeInteger(cost) || cost <= 0) {
    throw new BadRequestException(
      `Rate limit cost for policy "${policy.name}" must be a positive integer (got ${String(cost)})`,
    );
  }
  return cost > policy.maxCost;
}

/** A request to the store, with what the limiter needs of it once the store has answered. */
interface LimiterRequest extends DecideRequest {
  /** The costs as asked (`costs` caps them at capacity where that is exceeded). */
  readonly requestedCosts: readonly number[];
  /** Some cost exceeds its policy's capacity: denied whatever the store holds. */
  readonly beyondCapacity: boolean;
  /** For the deny cache: when the request was sent, in its clock, and its generation then. */
  readonly sentAt: number;
  readonly generation: number;
  /** Set for the lease holder's calls: what the store leased is written back to it. */
  readonly leaseCall: LeaseCall | undefined;
}

/** A lease holder's store call: its terms (none: an exact call), and the store's grant. */
interface LeaseCall {
  readonly terms: LeaseTerms | undefined;
  grant: LeaseGrant | undefined;
}

/** Store keys and what they were made of (the prefix aside, which never changes). */
interface KeysOfCall {
  readonly clientKeys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  /** Never changed once made: the store's requests and the deny cache's entries share it. */
  readonly keys: string[];
}

interface PreparedCall {
  /** The argument's policies when prepared. */
  readonly sources: readonly RateLimitPolicy[];
  readonly policies: readonly ResolvedPolicy[];
  /** Each policy's numeric cost, else 1: the costs of a call that names none. */
  readonly costs: readonly number[];
  /**
   * Filled with the call's client key on every call, instead of a new array: decide reads
   * client keys only while it makes the store keys, except for shadow policies (undefined).
   */
  readonly clientKeys: string[] | undefined;
}

function sameElements<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
