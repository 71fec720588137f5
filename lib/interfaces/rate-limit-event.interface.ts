import type { ExecutionContext, HttpException } from '@nestjs/common';
import type { PolicyResult } from './rate-limit-decision.interface.js';

/**
 * What became of a request the guard decided, one word per case, fit for a metric
 * attribute: `allowed`; `delayed` (admitted after a leaky-bucket wait); `denied` (429 from
 * the store's answer); `denied_cached` (429 from this pod's deny cache, the store not
 * asked); `dry_run_denied` (would be 429, admitted under `dryRun`); `failed_open` and
 * `failed_closed` (the store failed or was late: admitted, or 503). Per policy,
 * `shadow_denied` marks a shadow policy that would have denied.
 */
export type RateLimitOutcome =
  | 'allowed'
  | 'delayed'
  | 'denied'
  | 'denied_cached'
  | 'dry_run_denied'
  | 'failed_open'
  | 'failed_closed'
  | 'shadow_denied';

/** One decision of the guard, as the `onDecision` option receives it. */
export interface RateLimitDecisionEvent {
  /** The request's outcome (never `shadow_denied`: shadow policies decide no request). */
  readonly outcome: RateLimitOutcome;
  /** The route id used in keys, e.g. `UsersController.find` (never the client's key). */
  readonly route: string;
  /** The route's policy names, enforced and shadow, in declaration order. */
  readonly policies: readonly string[];
  /**
   * Per policy: what a metric with attributes policy, route and outcome counts: the
   * request's outcome, but `allowed` or `shadow_denied` for a shadow policy.
   */
  readonly outcomes: readonly RateLimitOutcome[];
  /** Per policy: the client key it was decided on. */
  readonly keys: readonly string[];
  /** Per policy: its result; empty when the store failed. */
  readonly results: readonly PolicyResult[];
  /** Set when the store failed or was late (`failed_open`, `failed_closed`). */
  readonly error?: HttpException & { readonly retryAfter: number };
  readonly context: ExecutionContext;
}

/**
 * Called synchronously after each decision of the guard, before the request proceeds or is
 * answered. Whatever it throws (or a promise it returns rejects with) is logged, throttled,
 * and never changes the answer.
 */
export type RateLimitDecisionHook = (event: RateLimitDecisionEvent) => void;
