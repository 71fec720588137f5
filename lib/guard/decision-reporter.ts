import type { ExecutionContext, Logger } from '@nestjs/common';
import type { RateLimitMetrics } from '../observability/rate-limit-metrics.js';
import type { RateLimitHttpException } from '../rate-limit.exceptions.js';
import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import type {
  RateLimitDecisionEvent,
  RateLimitDecisionHook,
  RateLimitOutcome,
} from '../interfaces/rate-limit-event.interface.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import type { RoutePlan } from './route-planner.js';
import { ThrottledLog } from '../observability/throttled-log.js';

/**
 * Tells the `onDecision` hook and the metrics what the guard decided. The hook is the app's
 * code: what it throws is logged (throttled) and never reaches the request.
 */
export class DecisionReporter {
  private readonly log: ThrottledLog;
  private readonly hook: RateLimitDecisionHook | undefined;
  private readonly metrics: RateLimitMetrics | undefined;

  constructor(
    private readonly options: Pick<ResolvedRateLimitOptions, 'onDecision' | 'metrics' | 'dryRun'>,
    logger: Logger,
  ) {
    this.log = new ThrottledLog(logger);
    this.hook = options.onDecision;
    this.metrics = options.metrics;
  }

  /** Reports a decision, or (with `error`) a store failure. */
  report(
    context: ExecutionContext,
    plan: RoutePlan,
    keys: readonly string[],
    decision: RateLimitDecision | undefined,
    error?: RateLimitHttpException,
  ): void {
    const outcome = decision
      ? this.outcomeOf(decision)
      : plan.failureMode === 'open'
        ? 'failed_open'
        : 'failed_closed';
    this.metrics?.decided(plan, outcome, decision);
    if (this.hook) this.callHook(this.hook, context, plan, keys, outcome, decision, error);
  }

  private callHook(
    hook: RateLimitDecisionHook,
    context: ExecutionContext,
    plan: RoutePlan,
    keys: readonly string[],
    outcome: RateLimitOutcome,
    decision: RateLimitDecision | undefined,
    error: RateLimitHttpException | undefined,
  ): void {
    const event: RateLimitDecisionEvent = {
      outcome,
      route: plan.route,
      policies: plan.policies.map((policy) => policy.name),
      outcomes: plan.policies.map((policy, i) =>
        policy.shadow && decision
          ? decision.results[i].allowed
            ? 'allowed'
            : 'shadow_denied'
          : outcome,
      ),
      keys,
      results: decision?.results ?? [],
      ...(error && { error }),
      context,
    };
    try {
      const returned: unknown = hook(event);
      if (returned instanceof Promise) returned.catch((reason) => this.complain(plan, reason));
    } catch (reason) {
      this.complain(plan, reason);
    }
  }

  private outcomeOf(decision: RateLimitDecision): RateLimitOutcome {
    if (decision.allowed) {
      // A loop, not some(): this runs on every request.
      for (const result of decision.results) if (result.delayMs > 0) return 'delayed';
      return 'allowed';
    }
    if (this.options.dryRun) return 'dry_run_denied';
    return decision.cached ? 'denied_cached' : 'denied';
  }

  private complain(plan: RoutePlan, reason: unknown): void {
    const message = reason instanceof Error ? reason.message : String(reason);
    this.log.warn(`onDecision hook failed on ${plan.route}: ${message}; the request went on`);
  }
}
