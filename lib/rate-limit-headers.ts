import type { HeaderStyle } from './rate-limit-options.interface.js';
import type { PolicyResult, RateLimitDecision } from './rate-limit-decision.interface.js';

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * The headers a client receives for a decision. `ietf` follows
 * draft-ietf-httpapi-ratelimit-headers (one list item per policy); `legacy` describes the
 * most restrictive policy: fewest remaining, then latest reset. Retry-After is not included.
 */
export function rateLimitHeaders(
  decision: RateLimitDecision,
  style: HeaderStyle,
  policyHeader?: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const { results } = decision;
  if (style === 'none' || results.length === 0) return headers;
  if (style === 'ietf' || style === 'both') {
    headers['RateLimit-Policy'] = policyHeader ?? rateLimitPolicyHeader(results);
    headers['RateLimit'] = results
      .map((r) => `"${r.policy}";r=${r.remaining};t=${seconds(r.resetMs)}`)
      .join(', ');
  }
  if (style === 'legacy' || style === 'both') {
    const tightest = results.reduce(moreRestrictive);
    headers['X-RateLimit-Limit'] = String(tightest.limit);
    headers['X-RateLimit-Remaining'] = String(tightest.remaining);
    headers['X-RateLimit-Reset'] = String(seconds(tightest.resetMs));
  }
  return headers;
}

/**
 * The `RateLimit-Policy` value: the same for every response of a route, so the guard
 * computes it once per route and passes it to rateLimitHeaders.
 */
export function rateLimitPolicyHeader(
  policies: readonly { policy: string; limit: number; window: number }[],
): string {
  return policies
    .map((p) => `"${p.policy}";q=${p.limit};w=${Math.max(1, seconds(p.window))}`)
    .join(', ');
}

function moreRestrictive(a: PolicyResult, b: PolicyResult): PolicyResult {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b;
  return b.resetMs > a.resetMs ? b : a;
}
