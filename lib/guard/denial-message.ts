import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import { retryAfterSeconds } from '../rate-limit.exceptions.js';

/** Whole seconds for a 429's Retry-After: the latest of the denying policies' (see RateLimitGuard.deny). */
export function retryAfterOf(decision: RateLimitDecision): number {
  let retryAfterMs = 0;
  for (const result of decision.results) {
    if (result.allowed || result.shadow) continue;
    retryAfterMs = Math.max(
      retryAfterMs,
      result.retryAfterMs === Infinity ? result.window : result.retryAfterMs,
    );
  }
  return retryAfterSeconds(retryAfterMs);
}

/** The message of a 429 (see RateLimitGuard.deny). */
export function denialMessage(decision: RateLimitDecision, retryAfter: number): string {
  const denied: string[] = [];
  const beyondCapacity: string[] = [];
  const capacities: number[] = [];
  for (const result of decision.results) {
    if (result.allowed || result.shadow) continue;
    denied.push(`"${result.policy}"`);
    if (result.retryAfterMs === Infinity) {
      beyondCapacity.push(`"${result.policy}"`);
      capacities.push(result.capacity);
    }
  }
  return beyondCapacity.length > 0
    ? `Rate limit exceeded: this request costs more than ${beyondCapacity.join(', ')} can ever admit (${capacities.join(', ')}); retrying cannot help.`
    : `Rate limit exceeded (${denied.join(', ')}); retry in ${retryAfter} s.`;
}
