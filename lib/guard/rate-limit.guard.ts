import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  Logger,
  SetMetadata,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { DecisionReporter } from './decision-reporter.js';
import { DenialResponses } from './denial-responses.js';
import {
  GLOBAL_GUARD,
  RATE_LIMIT_GUARD_METADATA,
  RATE_LIMIT_OPTIONS,
} from '../rate-limit.constants.js';
import {
  type RateLimitExceededException,
  RateLimitUnavailableException,
} from '../rate-limit.exceptions.js';
import { AbsentKeys, allKeysPresent } from './absent-keys.js';
import { clientIpKeyBy } from './proxy-trust-check.js';
import { denialMessage, retryAfterOf } from './denial-message.js';
import { OutcomeWatcher } from './outcome-watcher.js';
import type { FailureMode, KeyResolver } from '../interfaces/rate-limit-policy.interface.js';
import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import { tightestResult, writeRateLimitHeaders } from './rate-limit-headers.js';
import { type RenderedDenial, RenderedDenials } from './rendered-denials.js';
import { RateLimiter } from '../limiter/rate-limiter.service.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import { type RoutePlan, RoutePlanner } from './route-planner.js';
import { ThrottledLog } from '../observability/throttled-log.js';
import { transportError } from './transport-errors.js';
import { responseOf } from './transports.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/**
 * Applies the handler's policies to every request (HTTP, GraphQL, WebSocket, microservice,
 * as the `contextTypes` option says): one store round trip, headers on the HTTP response,
 * a denial in the transport's idiom, and the failure mode when the store is down or late.
 * Extension points are protected methods; override the provider or subclass it to change them.
 */
/** A key per policy, as `clientKeys` gives them: absent ones are the client address. */
type ClientKeys = (string | null | undefined)[];

@Injectable()
@SetMetadata(RATE_LIMIT_GUARD_METADATA, true)
export class RateLimitGuard implements CanActivate {
  protected readonly logger = new Logger('RateLimit');
  private readonly dryRunLog = new ThrottledLog(this.logger);
  private readonly absentKeys: AbsentKeys;
  private readonly contextTypes: ReadonlySet<string>;
  private readonly keyBy: KeyResolver;
  /** Set when the onDecision or metrics option is: without them, reporting costs nothing. */
  private readonly reporter: DecisionReporter | undefined;
  /** Set by RateLimitModule on its global instance, which yields to a guard applied by @UseGuards. */
  [GLOBAL_GUARD] = false;
  private readonly responses: DenialResponses;
  /** False in a subclass that overrides deny or getResponse: its hooks answer every 429. */
  private readonly reusesDenials: boolean;
  /** Each route's last 429, for the next while it shows the same (see refuse). */
  private readonly lastDenials = new WeakMap<RoutePlan, RenderedDenials>();
  /**
   * Header names as the HTTP adapter stores them: Fastify lowercases every name it is given,
   * which costs a new string (and a lookup of it) per header unless it is lowercase already.
   */
  private headerName: (name: string) => string = (name) => {
    const lower = this.adapterHost.httpAdapter?.getType() === 'fastify';
    this.headerName = lower ? (given) => given.toLowerCase() : (given) => given;
    return this.headerName(name);
  };
  /** Gives back what policies that count by outcome do not count (RoutePlan.countsOutcomes). */
  private readonly outcomes: OutcomeWatcher;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) protected readonly options: ResolvedRateLimitOptions,
    protected readonly limiter: RateLimiter,
    protected readonly planner: RoutePlanner,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.contextTypes = new Set(options.contextTypes);
    this.keyBy = options.keyBy ?? clientIpKeyBy(options, this.logger);
    this.absentKeys = new AbsentKeys(this.logger, options.ipv6Subnet);
    this.responses = new DenialResponses(options, this.logger);
    this.reporter =
      options.onDecision || options.metrics
        ? new DecisionReporter(options, this.logger)
        : undefined;
    this.reusesDenials =
      this.deny === RateLimitGuard.prototype.deny &&
      this.getResponse === RateLimitGuard.prototype.getResponse;
    this.outcomes = new OutcomeWatcher(limiter, this.logger);
  }

  // Not async: on HTTP the decision's own promise is all Nest awaits.
  canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.planner.standIn) return answerOf(this.planner.standIn, context);
    const type = context.getType<string>();
    if (!this.contextTypes.has(type)) return Promise.resolve(true);
    if (type === 'http') return this.limit(context);
    return this.limit(context).catch(async (error: unknown) => {
      throw error instanceof HttpException ? await this.toTransportError(context, error) : error;
    });
  }

  /** Decides the request and applies the decision; throws the HTTP exception that answers it. */
  private async limit(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler();
    const controller = context.getClass();
    const plan = this.planner.planFor(handler, controller);
    if (plan.policies.length === 0 || (plan.guardedExplicitly && this[GLOBAL_GUARD])) return true;
    if (this.options.skip && (await this.options.skip(context))) return true;

    const keys = this.clientKeys(context, plan);
    const given = Array.isArray(keys) ? keys : await keys;
    const clientKeys = allKeysPresent(given)
      ? given
      : this.absentKeys.filled(context, `${controller.name}.${handler.name}`, plan.policies, given);
    let policies = plan.policies;
    if (plan.limits) {
      const sized = plan.limits.resolve(context);
      policies = Array.isArray(sized) ? sized : await sized;
    }
    const costs = plan.fixedCosts ?? (await this.costs(context, policies));
    let decision: RateLimitDecision;
    try {
      decision = await this.limiter.decide('consume', clientKeys, policies, costs);
    } catch (error) {
      if (!(error instanceof RateLimitUnavailableException)) throw error;
      this.reporter?.report(context, plan, clientKeys, undefined, error);
      return this.onStoreFailure(context, error, plan.failureMode);
    }
    this.reporter?.report(context, plan, clientKeys, decision);
    if (!decision.allowed && !this.options.dryRun) return this.refuse(context, decision, plan);
    this.setHeaders(context, decision, plan);
    if (!decision.allowed) {
      this.dryRunLog.warn(
        `dry run: would have denied ${clientKeys[0]} on ${controller.name}.${handler.name}`,
      );
      return true;
    }
    if (plan.countsOutcomes) this.outcomes.watch(context, clientKeys, policies, costs, decision);
    let delayMs = 0;
    for (const result of decision.results) delayMs = Math.max(delayMs, result.delayMs);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return true;
  }

  /**
   * Answers a denial, headers first, with deny()'s exception: it travels Nest's exception
   * path, so interceptors, filters and instrumentation see the request end. Unless a
   * subclass overrides deny or getResponse, the route's last 429 is reused while it shows the
   * same (RenderedDenials), and the exception is returned as a rejection rather than thrown:
   * V8 records a message for each throw, and Nest's own frames rethrow it anyway.
   */
  private refuse(
    context: ExecutionContext,
    decision: RateLimitDecision,
    plan: RoutePlan,
  ): Promise<never> {
    if (!this.reusesDenials) {
      this.setHeaders(context, decision, plan);
      this.deny(context, decision);
    }
    let denials = this.lastDenials.get(plan);
    if (!denials) {
      denials = new RenderedDenials();
      this.lastDenials.set(plan, denials);
    }
    const { headers, retryAfter, message } = this.rendered(denials, decision, plan);
    const response = this.getResponse(context);
    if (response) {
      const { httpAdapter } = this.adapterHost;
      for (const [name, value] of headers) httpAdapter.setHeader(response, name, value);
    }
    return Promise.reject(this.responses.limited(context, decision, message, retryAfter));
  }

  /** The headers and message of a route's 429: the route's last, if it shows the same. */
  private rendered(
    denials: RenderedDenials,
    decision: RateLimitDecision,
    plan: RoutePlan,
  ): RenderedDenial {
    const style = this.options.headers;
    const retryAfter = retryAfterOf(decision);
    const tightest = style === 'legacy' || style === 'both' ? tightestResult(decision.results) : -1;
    const known = denials.find(decision, retryAfter, tightest);
    if (known) return known;
    const headers: [string, string][] = [];
    writeRateLimitHeaders(decision, style, plan.policyHeader, (name, value) =>
      headers.push([this.headerName(name), value]),
    );
    headers.push([this.headerName('Retry-After'), String(retryAfter)]);
    const rendered = { headers, retryAfter, message: denialMessage(decision, retryAfter) };
    denials.keep(decision, retryAfter, tightest, rendered);
    return rendered;
  }

  /**
   * Who is limited, per policy; override to key by user, API key or tenant. A key left
   * absent (`undefined`, `null`, `''`) is the client address, with a warning.
   */
  protected clientKeys(
    context: ExecutionContext,
    plan: RoutePlan,
  ): ClientKeys | Promise<ClientKeys> {
    const moduleKey = this.keyBy(context);
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

  /**
   * Store down or late: admit and warn (open) or answer 503 (closed). `failureMode` is the
   * route's: the strictest of its policies' (the local fallback decides 'local' routes
   * before this is reached).
   */
  protected onStoreFailure(
    context: ExecutionContext,
    error: RateLimitUnavailableException,
    failureMode: FailureMode = this.options.failureMode,
  ): boolean {
    // The outage is logged where the store's calls are seen (see OutageLog), once.
    if (failureMode === 'open') return true;
    this.setRetryAfter(context, error.retryAfter);
    throw this.responses.unavailable(context, error);
  }

  /**
   * Throws the 429, after setting Retry-After so it survives any exception filter. A cost
   * a policy can never admit gets that policy's window as Retry-After: no retry at that
   * cost can pass, and the message says so.
   */
  protected deny(context: ExecutionContext, decision: RateLimitDecision): never {
    throw this.limitedException(context, decision);
  }

  /**
   * The 429 deny() throws, Retry-After set. Returned, not thrown: V8 moves a function
   * towards optimization as it returns, so one that always throws is never optimized, and
   * this is most of a denial's work.
   */
  private limitedException(
    context: ExecutionContext,
    decision: RateLimitDecision,
  ): RateLimitExceededException {
    const retryAfter = retryAfterOf(decision);
    this.setRetryAfter(context, retryAfter);
    return this.responses.limited(
      context,
      decision,
      denialMessage(decision, retryAfter),
      retryAfter,
    );
  }

  /**
   * The HTTP response that carries the headers, or undefined when the transport has none
   * (WebSocket and microservice messages). For GraphQL: the response of the HTTP request
   * behind the operation (Express' `req.res`, or a `res` or `reply` in the GraphQL context).
   * Override to give a transport of your own headers.
   */
  protected getResponse(context: ExecutionContext): unknown {
    return responseOf(context);
  }

  /**
   * What the guard throws, outside HTTP, for the 429, 503 or 400 it answers: a `WsException`
   * or `RpcException` of `{ status: 'error', code, message, retryAfter }`. For GraphQL the
   * `HttpException` itself, which the module's `RateLimitExceptionFilter` turns into a
   * GraphQL error with `extensions.code` ('RATE_LIMITED', 'RATE_LIMIT_UNAVAILABLE') and
   * `retryAfter`. Override to answer a transport of your own in its idiom.
   */
  protected toTransportError(context: ExecutionContext, exception: HttpException): Promise<Error> {
    // RateLimitExceptionFilter turns it into the GraphQL error: thrown past the filters, any
    // error but an HttpException is logged by Nest as an unhandled one.
    if (context.getType<string>() === 'graphql') return Promise.resolve(exception);
    return transportError(context, exception);
  }

  /** Set by the guard itself, so it survives an app-wide exception filter of the user's. */
  private setRetryAfter(context: ExecutionContext, seconds: number): void {
    const response = this.getResponse(context);
    if (response) this.adapterHost.httpAdapter.setHeader(response, 'Retry-After', String(seconds));
  }

  private setHeaders(
    context: ExecutionContext,
    decision: RateLimitDecision,
    plan: RoutePlan,
  ): void {
    if (this.options.headers === 'none') return;
    const response = this.getResponse(context);
    if (!response) return;
    const { httpAdapter } = this.adapterHost;
    writeRateLimitHeaders(decision, this.options.headers, plan.policyHeader, (name, value) =>
      httpAdapter.setHeader(response, name, value),
    );
  }
}

/** What a guard answers, as one promise (Nest takes a boolean, a promise or an Observable). */
function answerOf(guard: CanActivate, context: ExecutionContext): Promise<boolean> {
  const answer = guard.canActivate(context);
  return isObservable(answer) ? lastValueFrom(answer) : Promise.resolve(answer);
}
