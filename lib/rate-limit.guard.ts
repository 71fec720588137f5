import {
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type OnModuleInit,
} from '@nestjs/common';
import { createHash } from 'node:crypto';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, Reflector } from '@nestjs/core';
import {
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_POLICIES_METADATA,
  SKIP_RATE_LIMIT_METADATA,
} from './rate-limit.constants.js';
import {
  RateLimitExceededException,
  RateLimitUnavailableException,
  retryAfterSeconds,
} from './rate-limit.exceptions.js';
import type { RateLimitDecision } from './rate-limit-decision.interface.js';
import { RateLimitConfigError } from './rate-limit-config.error.js';
import { rateLimitHeaders, rateLimitPolicyHeader } from './rate-limit-headers.js';
import type { RateLimitPolicy } from './rate-limit-policy.interface.js';
import { RateLimiter } from './rate-limiter.service.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';
import { type ResolvedPolicy, resolvePolicies } from './resolved-policy.js';
import { ThrottledLog } from './throttled-log.js';

/** What the guard knows of one handler, worked out once at start-up. */
export interface RoutePlan {
  readonly policies: readonly ResolvedPolicy[];
  /** Set when no policy has a cost function: the same array serves every request. */
  readonly fixedCosts: readonly number[] | undefined;
  /** Set when no policy has its own keyBy: the module's key serves them all. */
  readonly sharesModuleKey: boolean;
  /** The RateLimit-Policy header value, the same for every response. */
  readonly policyHeader: string;
}

/** Route ids go into keys: plain ASCII and bounded, or hashed. */
const READABLE_ROUTE = /^[\w.$-]{1,64}$/;

/** A route handler or controller class, as Nest hands them over. */
type Named = { readonly name: string };

const UNLIMITED: RoutePlan = {
  policies: [],
  fixedCosts: [],
  sharesModuleKey: true,
  policyHeader: '',
};

/**
 * Applies the route's policies to every HTTP request: one store round trip, headers on
 * the response, 429 when denied, and the failure mode when the store is down or late.
 * Extension points are protected methods; override the provider to change them.
 */
@Injectable()
export class RateLimitGuard implements CanActivate, OnModuleInit {
  protected readonly logger = new Logger('RateLimit');
  private readonly failureLog = new ThrottledLog(this.logger);
  private readonly dryRunLog = new ThrottledLog(this.logger);
  /** By controller, then handler: an inherited handler serves several controllers. */
  private readonly plans = new Map<Named, Map<Named, RoutePlan>>();
  /** Route ids in use, with the controller and handler each names. */
  private readonly routeIds = new Map<string, readonly [Named, Named]>();

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) protected readonly options: ResolvedRateLimitOptions,
    protected readonly limiter: RateLimiter,
    protected readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly metadataScanner: MetadataScanner,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Resolves and validates every route's policies, so a mistake stops the start. */
  onModuleInit(): void {
    for (const wrapper of this.discovery.getControllers()) {
      const { instance, metatype } = wrapper;
      if (!instance || typeof metatype !== 'function') continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const method of this.metadataScanner.getAllMethodNames(prototype)) {
        this.planFor(prototype[method] as Named, metatype as Named);
      }
    }
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const handler: Named = context.getHandler();
    const controller: Named = context.getClass();
    const plan = this.plans.get(controller)?.get(handler) ?? this.planFor(handler, controller);
    if (plan.policies.length === 0) return true;
    if (this.options.skip && (await this.options.skip(context))) return true;

    const keys = this.clientKeys(context, plan);
    const clientKeys = Array.isArray(keys) ? keys : await keys;
    const costs = plan.fixedCosts ?? (await this.costs(context, plan.policies));
    let decision: RateLimitDecision;
    try {
      decision = await this.limiter.decide('consume', clientKeys, plan.policies, costs);
    } catch (error) {
      if (error instanceof RateLimitUnavailableException)
        return this.onStoreFailure(context, error);
      throw error;
    }
    this.setHeaders(context, decision, plan);
    if (!decision.allowed) {
      if (!this.options.dryRun) this.deny(context, decision);
      this.dryRunLog.warn(
        `dry run: would have denied ${clientKeys[0]} on ${controller.name}.${handler.name}`,
      );
      return true;
    }
    const delayMs = Math.max(...decision.results.map((result) => result.delayMs));
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return true;
  }

  /** Who is limited, per policy; override to key by user, API key or tenant. */
  protected clientKeys(context: ExecutionContext, plan: RoutePlan): string[] | Promise<string[]> {
    const moduleKey = this.options.keyBy(context);
    // The usual case, a synchronous keyBy shared by all policies, takes no promise at all.
    if (plan.sharesModuleKey && typeof moduleKey === 'string') {
      return plan.policies.length === 1 ? [moduleKey] : plan.policies.map(() => moduleKey);
    }
    return Promise.resolve(moduleKey).then((key) =>
      Promise.all(plan.policies.map((policy) => (policy.keyBy ? policy.keyBy(context) : key))),
    );
  }

  /** What this request costs under each policy. */
  protected costs(
    context: ExecutionContext,
    policies: readonly ResolvedPolicy[],
  ): Promise<number[]> {
    return Promise.all(
      policies.map((policy) =>
        typeof policy.cost === 'function' ? policy.cost(context) : policy.cost,
      ),
    );
  }

  /** Store down or late: admit and warn (open) or answer 503 (closed). */
  protected onStoreFailure(
    context: ExecutionContext,
    error: RateLimitUnavailableException,
  ): boolean {
    const open = this.options.failureMode === 'open';
    this.failureLog.warn(
      `${error.message}; ${open ? 'admitting requests' : 'answering 503'} (failureMode '${this.options.failureMode}')`,
    );
    if (open) return true;
    this.setRetryAfter(context, error.retryAfter);
    throw error;
  }

  /**
   * Throws the 429, after setting Retry-After so it survives any exception filter. A cost
   * a policy can never admit gets that policy's window as Retry-After: no retry at that
   * cost can pass, and the message says so.
   */
  protected deny(context: ExecutionContext, decision: RateLimitDecision): never {
    const denied = decision.results.filter((result) => !result.allowed);
    const hopeless = denied.filter((result) => result.retryAfterMs === Infinity);
    const retryAfter = retryAfterSeconds(
      Math.max(
        ...denied.map((result) =>
          result.retryAfterMs === Infinity ? result.window : result.retryAfterMs,
        ),
      ),
    );
    this.setRetryAfter(context, retryAfter);
    const names = (results: typeof denied) =>
      results.map((result) => `"${result.policy}"`).join(', ');
    throw new RateLimitExceededException(
      hopeless.length > 0
        ? `Rate limit exceeded: this request costs more than ${names(hopeless)} can ever admit (${hopeless.map((result) => result.capacity).join(', ')}); retrying cannot help.`
        : `Rate limit exceeded (${names(denied)}); retry in ${retryAfter} s.`,
      retryAfter,
    );
  }

  /** Set by the guard itself, so it survives an app-wide exception filter of the user's. */
  private setRetryAfter(context: ExecutionContext, seconds: number): void {
    this.adapterHost.httpAdapter.setHeader(
      context.switchToHttp().getResponse(),
      'Retry-After',
      String(seconds),
    );
  }

  private setHeaders(
    context: ExecutionContext,
    decision: RateLimitDecision,
    plan: RoutePlan,
  ): void {
    if (this.options.headers === 'none') return;
    const response: unknown = context.switchToHttp().getResponse();
    const { httpAdapter } = this.adapterHost;
    const headers = rateLimitHeaders(decision, this.options.headers, plan.policyHeader);
    for (const [name, value] of Object.entries(headers)) {
      httpAdapter.setHeader(response, name, value);
    }
  }

  /**
   * The handler's own decorators win over its controller's: its @RateLimit replaces the
   * controller's policies (and escapes the controller's @SkipRateLimit), its
   * @SkipRateLimit replaces the controller's.
   */
  private planFor(handler: Named, controller: Named): RoutePlan {
    const metadata = <T>(key: string, target: Named) =>
      this.reflector.get<T | undefined>(key, target as never);
    const handlerPolicies = metadata<RateLimitPolicy[]>(RATE_LIMIT_POLICIES_METADATA, handler);
    const declared =
      handlerPolicies ?? metadata<RateLimitPolicy[]>(RATE_LIMIT_POLICIES_METADATA, controller);
    const skip =
      metadata<string[] | true>(SKIP_RATE_LIMIT_METADATA, handler) ??
      (handlerPolicies
        ? undefined
        : metadata<string[] | true>(SKIP_RATE_LIMIT_METADATA, controller));
    const label = `${controller.name}.${handler.name}`;
    let plan = UNLIMITED;
    if (skip !== true) {
      const routeId = this.routeId(label, controller, handler);
      const source = declared
        ? { label, routeId, defaultScope: 'route' as const }
        : {
            label: `RateLimitModule options (for ${label})`,
            routeId,
            defaultScope: 'global' as const,
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
      plan = {
        policies,
        fixedCosts: costsAreFixed ? policies.map((policy) => policy.cost as number) : undefined,
        sharesModuleKey: policies.every((policy) => !policy.keyBy),
        policyHeader: rateLimitPolicyHeader(
          policies.map(({ name, limit, windowMs, maxCost }) => ({
            policy: name,
            limit,
            window: windowMs,
            capacity: maxCost,
          })),
        ),
      };
    }
    const byHandler = this.plans.get(controller) ?? new Map<Named, RoutePlan>();
    this.plans.set(controller, byHandler.set(handler, plan));
    return plan;
  }

  /**
   * Names a route in keys: `Controller.handler` when short and plain, else a hash of it;
   * two controllers of one name (in different modules) get '~2', '~3' in discovery order.
   */
  private routeId(label: string, controller: Named, handler: Named): string {
    const base = READABLE_ROUTE.test(label)
      ? label
      : '#' + createHash('sha256').update(label).digest('base64url').slice(0, 22);
    let id = base;
    for (let n = 2; ; n++) {
      const owner = this.routeIds.get(id);
      if (!owner || (owner[0] === controller && owner[1] === handler)) break;
      id = `${base}~${n}`;
    }
    this.routeIds.set(id, [controller, handler]);
    return id;
  }
}
