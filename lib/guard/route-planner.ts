import { type CanActivate, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants.js';
import { createHash } from 'node:crypto';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import {
  RATE_LIMIT_GUARD_METADATA,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_POLICIES_METADATA,
  RATE_LIMIT_STORE,
  SKIP_RATE_LIMIT_METADATA,
} from '../rate-limit.constants.js';
import { RateLimitConfigError } from '../config/rate-limit-config.error.js';
import { rateLimitPolicyHeader } from './rate-limit-headers.js';
import type { FailureMode, RateLimitPolicy } from '../interfaces/rate-limit-policy.interface.js';
import { RequestLimits } from './request-limits.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import { strictestFailureMode } from '../config/failure-mode.js';
import { resolvePolicies } from '../config/resolved-policy.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import type { RateLimitStore } from '../interfaces/rate-limit-store.interface.js';

/** What the guard knows of one handler, worked out once at start-up. */
export interface RoutePlan {
  /** The route's id in keys and in `onDecision` events, e.g. `UsersController.find`. */
  readonly route: string;
  /**
   * The policies; where `limits` is set, some are templates (perRequest set) that only
   * `limits.resolve` turns into policies a decision can use.
   */
  readonly policies: readonly ResolvedPolicy[];
  /** Set when some policy's limit or burst is a function: the route's per-request sizing. */
  readonly limits: RequestLimits | undefined;
  /** Set when no policy has a cost function: the same array serves every request. */
  readonly fixedCosts: readonly number[] | undefined;
  /** Set when no policy has its own keyBy: the module's key serves them all. */
  readonly sharesModuleKey: boolean;
  /**
   * The RateLimit-Policy header value, the same for every response; undefined where limits
   * vary per request, which write it from each decision's results.
   */
  readonly policyHeader: string | undefined;
  /**
   * Set when the handler or its class has `@UseGuards(RateLimitGuard)` (or a subclass):
   * that guard decides, and the global one lets the request through, so nothing is charged
   * twice.
   */
  readonly guardedExplicitly: boolean;
  /** What a store failure means here: the strictest of the policies' failure modes. */
  readonly failureMode: FailureMode;
  /**
   * Set when some policy counts by outcome (`count` other than 'all'): the guard then
   * watches each admitted request's outcome to give back what it does not count.
   */
  readonly countsOutcomes: boolean;
}

/** A handler function or the class that holds it, as Nest hands them over. */
export type RouteTarget = { readonly name: string };

/** Route ids go into keys: plain ASCII and bounded, or hashed. */
const READABLE_ROUTE = /^[\w.$-]{1,64}$/;

const UNLIMITED: RoutePlan = {
  route: '',
  policies: [],
  limits: undefined,
  fixedCosts: [],
  sharesModuleKey: true,
  policyHeader: '',
  guardedExplicitly: false,
  failureMode: 'open',
  countsOutcomes: false,
};

/**
 * Works out every handler's policies when the application starts, so that a mistake stops
 * the start and a request only looks its plan up. Injected into `RateLimitGuard`.
 */
@Injectable()
export class RoutePlanner {
  /** By class, then handler: an inherited handler serves several classes. */
  private readonly plans = new Map<RouteTarget, Map<RouteTarget, RoutePlan>>();
  /** Route ids in use, with the class and handler each names. */
  private readonly routeIds = new Map<string, readonly [RouteTarget, RouteTarget]>();
  private readonly logger = new Logger('RateLimit');
  /** The routes whose failure mode is not the module's, by mode, as their labels. */
  private readonly otherFailureModes = new Map<FailureMode, string[]>();
  /** See unguardedRoutes. */
  private readonly unguarded: string[] = [];
  /**
   * What replaced the module's RateLimitGuard provider, if anything did (a test's
   * `overrideProvider(RateLimitGuard).useValue(...)`): every RateLimitGuard, those that
   * `@UseGuards` applies included, answers as it does, since the plans it would follow are
   * not the ones in force.
   */
  standIn: CanActivate | undefined;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly metadataScanner: MetadataScanner,
    // Optional: a planner provided without the module's store checks no store's abilities.
    @Optional() @Inject(RATE_LIMIT_STORE) private readonly store?: Pick<RateLimitStore, 'refund'>,
  ) {}

  /**
   * Plans every controller's handlers, and those of providers that carry the decorators
   * (GraphQL resolvers, WebSocket gateways); a mistake throws RateLimitConfigError. Called
   * by RateLimitModule at start, which then releases what it opened.
   */
  planAll(): void {
    for (const wrapper of this.discovery.getControllers()) this.planClass(wrapper, true);
    for (const wrapper of this.discovery.getProviders()) this.planClass(wrapper, false);
  }

  /** The routes planned so far whose failure mode is not the module's, by mode. */
  failureModeRoutes(): ReadonlyMap<FailureMode, readonly string[]> {
    return this.otherFailureModes;
  }

  /**
   * With `guard: false`, the routes planned so far that have policies but no
   * `@UseGuards(RateLimitGuard)`: limited only by a guard the app applies itself.
   */
  unguardedRoutes(): readonly string[] {
    return this.unguarded;
  }

  /**
   * Every controller handler's plan, with its class and method name: from the classes
   * alone, so that it serves before start-up (an OpenAPI document is built before
   * `app.init()`); planAll then finds them planned. A mistake throws as in planAll.
   */
  controllerPlans(): { owner: RouteTarget; method: string; plan: RoutePlan }[] {
    const plans: { owner: RouteTarget; method: string; plan: RoutePlan }[] = [];
    for (const { metatype } of this.discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const method of this.metadataScanner.getAllMethodNames(prototype)) {
        const plan = this.planFor(prototype[method] as RouteTarget, metatype);
        plans.push({ owner: metatype, method, plan });
      }
    }
    return plans;
  }

  /** The plan of `handler` as reached through `owner` (planned now if start-up did not see it). */
  planFor(handler: RouteTarget, owner: RouteTarget): RoutePlan {
    return this.plans.get(owner)?.get(handler) ?? this.plan(handler, owner);
  }

  private planClass(
    { instance, metatype }: { instance: unknown; metatype: unknown },
    always: boolean,
  ): void {
    // Factory and value providers have no class of their own to plan.
    if (!instance || typeof metatype !== 'function') return;
    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
    if (prototype !== metatype.prototype) return;
    const handlers = this.metadataScanner
      .getAllMethodNames(prototype)
      .map((method) => prototype[method] as RouteTarget);
    const decorated = (target: RouteTarget) =>
      [RATE_LIMIT_POLICIES_METADATA, SKIP_RATE_LIMIT_METADATA].some(
        (key) => this.reflector.get(key, target as never) !== undefined,
      );
    if (!always && !decorated(metatype) && !handlers.some(decorated)) return;
    for (const handler of handlers) this.planFor(handler, metatype);
  }

  /**
   * The handler's own decorators win over its class's: its @RateLimit replaces the class's
   * policies (and escapes the class's @SkipRateLimit), its @SkipRateLimit replaces the class's.
   */
  private plan(handler: RouteTarget, owner: RouteTarget): RoutePlan {
    const metadata = <T>(key: string, target: RouteTarget) =>
      this.reflector.get<T | undefined>(key, target as never);
    const handlerPolicies = metadata<RateLimitPolicy[]>(RATE_LIMIT_POLICIES_METADATA, handler);
    const declared =
      handlerPolicies ?? metadata<RateLimitPolicy[]>(RATE_LIMIT_POLICIES_METADATA, owner);
    const skip =
      metadata<string[] | true>(SKIP_RATE_LIMIT_METADATA, handler) ??
      (handlerPolicies ? undefined : metadata<string[] | true>(SKIP_RATE_LIMIT_METADATA, owner));
    const label = `${owner.name}.${handler.name}`;
    let plan = UNLIMITED;
    if (skip !== true) {
      const routeId = this.routeId(label, owner, handler);
      const source = {
        label: declared ? label : `RateLimitModule options (for ${label})`,
        routeId,
        defaultScope: this.options.defaults.scope ?? (declared ? 'route' : 'global'),
        defaultAlgorithm: this.options.defaults.algorithm,
        localShare: this.options.instances !== undefined,
        perRequest: true,
      };
      const resolved = resolvePolicies(declared ?? this.options.policies, source);
      const unknown =
        skip?.filter((name) => !resolved.some((policy) => policy.name === name)) ?? [];
      if (unknown.length > 0) {
        throw new RateLimitConfigError(
          `Invalid @SkipRateLimit on ${label}: no policy named ${unknown.map((name) => `"${name}"`).join(', ')} applies there`,
        );
      }
      const policies = resolved.filter((policy) => !skip?.includes(policy.name));
      const costsAreFixed = policies.every((policy) => typeof policy.cost === 'number');
      const limitsAreFixed = policies.every((policy) => !policy.perRequest);
      plan = {
        route: routeId,
        policies,
        limits: limitsAreFixed ? undefined : new RequestLimits(label, policies, this.logger),
        fixedCosts: costsAreFixed ? policies.map((policy) => policy.cost as number) : undefined,
        sharesModuleKey: policies.every((policy) => !policy.keyBy),
        policyHeader: limitsAreFixed
          ? rateLimitPolicyHeader(
              policies.map(({ name, limit, windowMs, maxCost }) => ({
                policy: name,
                limit,
                window: windowMs,
                capacity: maxCost,
              })),
            )
          : undefined,
        guardedExplicitly: [handler, owner].some((target) => this.hasOwnRateLimitGuard(target)),
        failureMode: this.failureModeOf(policies),
        countsOutcomes: this.countsOutcomes(label, policies),
      };
      if (policies.length > 0 && !this.options.guard && !plan.guardedExplicitly) {
        this.unguarded.push(label);
      } else if (plan.failureMode !== this.options.failureMode && policies.length > 0) {
        const routes = this.otherFailureModes.get(plan.failureMode) ?? [];
        this.otherFailureModes.set(plan.failureMode, [...routes, label]);
      }
    }
    const byHandler = this.plans.get(owner) ?? new Map<RouteTarget, RoutePlan>();
    this.plans.set(owner, byHandler.set(handler, plan));
    return plan;
  }

  /**
   * What a store failure means on a route: the strictest mode of the policies it enforces.
   * Shadow policies and a dry run never hold a request back, so they fail open.
   */
  private failureModeOf(policies: readonly ResolvedPolicy[]): FailureMode {
    const enforced = policies.filter((policy) => !policy.shadow);
    if (enforced.length === 0) return 'open';
    const mode = strictestFailureMode(enforced, this.options.failureMode);
    return this.options.dryRun && mode === 'closed' ? 'open' : mode;
  }

  /**
   * Names a route in keys: `Class.handler` when short and plain, else a hash of it; two
   * classes of one name (in different modules) get '~2', '~3' in discovery order.
   */
  private routeId(label: string, owner: RouteTarget, handler: RouteTarget): string {
    const base = READABLE_ROUTE.test(label)
      ? label
      : '#' + createHash('sha256').update(label).digest('base64url').slice(0, 22);
    let id = base;
    for (let n = 2; ; n++) {
      const taken = this.routeIds.get(id);
      if (!taken || (taken[0] === owner && taken[1] === handler)) break;
      id = `${base}~${n}`;
    }
    this.routeIds.set(id, [owner, handler]);
    return id;
  }

  /** Whether a policy counts by outcome; such a policy needs a store that gives units back. */
  private countsOutcomes(label: string, policies: readonly ResolvedPolicy[]): boolean {
    const counting = policies.find((policy) => policy.count !== 'all');
    if (counting && this.store && !this.store.refund) {
      throw new RateLimitConfigError(
        `Invalid rate limit policy "${counting.name}" on ${label}: count '${counting.count}' needs a store that can give units back (RateLimitStore.refund), which the store in use cannot`,
      );
    }
    return counting !== undefined;
  }

  private hasOwnRateLimitGuard(target: RouteTarget): boolean {
    const guards = this.reflector.get<unknown[] | undefined>(GUARDS_METADATA, target as never);
    return (
      guards?.some(
        (guard) =>
          guard != null &&
          this.reflector.get<boolean | undefined>(
            RATE_LIMIT_GUARD_METADATA,
            (typeof guard === 'function' ? guard : guard.constructor) as never,
          ) === true,
      ) ?? false
    );
  }
}
