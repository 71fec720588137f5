import type { PolicyResult } from '../interfaces/rate-limit-decision.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/**
 * How far past the instant of its charge an admitted result's reset ends, in windows: a fixed
 * window's at its window's end (reset = end - now), a sliding counter's a window later.
 */
const WINDOWS_TO_RESET: Partial<Record<ResolvedPolicy['algorithm'], number>> = {
  'fixed-window': 1,
  'sliding-window-counter': 2,
};

/**
 * The window an admitted request was charged in, from `instant`, an estimate of the
 * decision's instant on the store's clock, and the reset the decision reported: the reset
 * ends on a window boundary, so the estimate only has to be within half a window of the
 * truth (Redis TIME, read by the script, is known here only to a round trip).
 */
export function chargedWindow(policy: ResolvedPolicy, result: PolicyResult, instant: number) {
  const windows = WINDOWS_TO_RESET[policy.algorithm]!;
  return Math.round((instant + result.resetMs) / policy.windowMs) - windows;
}

/**
 * RefundRequest.chargedAt for one policy of an admitted request: the middle of the window
 * charged (the windows), the estimate itself (the sliding log, whose entries it bounds from
 * above when it errs late), the request's start (the leaky bucket); the token bucket needs
 * none.
 */
export function chargedAt(
  policy: ResolvedPolicy,
  result: PolicyResult,
  instant: number,
): number | undefined {
  switch (policy.algorithm) {
    case 'fixed-window':
    case 'sliding-window-counter':
      return (chargedWindow(policy, result, instant) + 0.5) * policy.windowMs;
    case 'sliding-window-log':
      return instant;
    case 'leaky-bucket':
      return instant + result.delayMs;
    default:
      return undefined;
  }
}
