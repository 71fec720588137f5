import {
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type OnModuleInit,
} from '@nestjs/common';
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
import { rateLimitHeaders } from './rate-limit-headers.js';
import type { RateLimitPolicy } from './rate-limit-policy.interface.js';
import { RateLimiter } from './rate-limiter.service.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';
import { type ResolvedPolicy, resolvePolicies } from './resolved-policy.js';
import { ThrottledLog } from './throttled-log.js';

/** What the guard knows of one handler, worked out once at start-up. */
interface RoutePlan {
  readonly policies: readonly ResolvedPolicy[];
  /** Set when no policy has a cost function: the same array serves every request. */
  readonly fixedCosts: readonly number[] | undefined;
  /** Set when no policy has its own keyBy: the module's key serves them all. */
  readonly sharesModuleKey: boolean;
}

/** A route handler or controller class, as Nest hands them over. */
type Named = { readonly name: string };

const UNLIMITED: RoutePlan = { policies: [], fixedCosts: [], sharesModuleKey: true };

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
  private readonly plans = new Map<unknown, RoutePlan>();
  private readonly routeIds = new Map<string, unknown>();

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
        this.planFor(prototype[method] as Named, metatype);
      }
    }
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const handler: Named = context.getHandler();
    const plan = this.plans.get(handler) ?? this.planFor(handler, context.getClass());
    if (plan.policies.length === 0) return true;
    if (this.options.skip && (await this.options.skip(context))) return true;

    const clientKeys = await this.clientKeys(context, plan);
    const costs = plan.fixedCosts ?? (await this.costs(context, plan.policies));
    let decision: RateLimitDecision;
    try {
      decision = await this.limiter.decide('consume', clientKeys, plan.policies, costs);
    } catch (error) {
      if (error instanceof RateLimitUnavailableException) return this.onStoreFailure(error);
      throw error;
    }
    this.setHeaders(context, decision);
    if (!decision.allowed) {
      if (!this.options.dryRun) this.deny(context, decision);
      this.dryRunLog.warn(
        `dry run: would have denied ${clientKeys[0]} on ${context.getClass().name}.${handler.name}`,
      );
      return true;
    }
    const delayMs = Math.max(...decision.results.map((result) => result.delayMs));
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return true;
  }

  /** Who is limited, per policy; override to key by user, API key or tenant. */
  protected async clientKeys(context: ExecutionContext, plan: RoutePlan): Promise<string[]> {
    const moduleKey = await this.options.keyBy(context);
    if (plan.sharesModuleKey)
      return plan.policies.length === 1 ? [moduleKey] : plan.policies.map(() => moduleKey);
    return Promise.all(
      plan.policies.map((policy) => (policy.keyBy ? policy.keyBy(context) : moduleKey)),
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
  protected onStoreFailure(error: RateLimitUnavailableException): boolean {
    const open = this.options.failureMode === 'open';
    this.failureLog.warn(
      `${error.message}; ${open ? 'admitting requests' : 'answering 503'} (failureMode '${this.options.failureMode}')`,
    );
    if (open) return true;
    throw error;
  }

  /** Throws the 429, after setting Retry-After so it survives any exception filter. */
  protected deny(context: ExecutionContext, decision: RateLimitDecision): never {
    const denied = decision.results.filter((result) => !result.allowed);
    const retryAfter = retryAfterSeconds(
      Math.max(...decision.results.map((result) => result.retryAfterMs)),
    );
    this.adapterHost.httpAdapter.setHeader(
      context.switchToHttp().getResponse(),
      'Retry-After',
      String(retryAfter),
    );
    const names = denied.map((result) => `"${result.policy}"`).join(', ');
    throw new RateLimitExceededException(
      `Rate limit exceeded (${names}); retry in ${retryAfter} s.`,
      retryAfter,
    );
  }

  private setHeaders(context: ExecutionContext, decision: RateLimitDecision): void {
    if (this.options.headers === 'none') return;
    const response: unknown = context.switchToHttp().getResponse();
    const { httpAdapter } = this.adapterHost;
    for (const [name, value] of Object.entries(rateLimitHeaders(decision, this.options.headers))) {
      httpAdapter.setHeader(response, name, value);
    }
  }

  private planFor(handler: Named, controller: Named): RoutePlan {
    const cached = this.plans.get(handler);
    if (cached) return cached;
    const targets = [handler, controller] as Parameters<Reflector['getAllAndOverride']>[1];
    const skip = this.reflector.getAllAndOverride<string[] | true | undefined>(
      SKIP_RATE_LIMIT_METADATA,
      targets,
    );
    const declared = this.reflector.getAllAndOverride<RateLimitPolicy[] | undefined>(
      RATE_LIMIT_POLICIES_METADATA,
      targets,
    );
    const label = `${controller.name}.${handler.name}`;
    let plan = UNLIMITED;
    if (skip !== true) {
      const source = declared
        ? { label, routeId: this.routeId(label, handler), defaultScope: 'route' as const }
        : {
            label: `RateLimitModule options (for ${label})`,
            routeId: this.routeId(label, handler),
            defaultScope: 'global' as const,
          };
      const policies = resolvePolicies(declared ?? this.options.policies, source).filter(
        (policy) => !skip?.includes(policy.name),
      );
      const costsAreFixed = policies.every((policy) => typeof policy.cost === 'number');
      plan = {
        policies,
        fixedCosts: costsAreFixed ? policies.map((policy) => policy.cost as number) : undefined,
        sharesModuleKey: policies.every((policy) => !policy.keyBy),
      };
    }
    this.plans.set(handler, plan);
    return plan;
  }

  /** Names a route in keys; two controllers of one name in different modules get '~2', '~3'. */
  private routeId(label: string, handler: unknown): string {
    let id = label.length <= 64 ? label : label.slice(0, 64);
    for (let n = 2; this.routeIds.has(id) && this.routeIds.get(id) !== handler; n++) {
      id = `${label.slice(0, 60)}~${n}`;
    }
    this.routeIds.set(id, handler);
    return id;
  }
}
