import type { HeaderStyle } from '../interfaces/rate-limit-options.interface.js';
import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';

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
  writeRateLimitHeaders(decision, style, policyHeader, (name, value) => (headers[name] = value));
  return headers;
}

/** The same headers as rateLimitHeaders, handed to `set` one by one (the guard's hot path). */
export function writeRateLimitHeaders(
  { results }: RateLimitDecision,
  style: HeaderStyle,
  policyHeader: string | undefined,
  set: (name: string, value: string) => void,
): void {
  if (style === 'none' || results.length === 0) return;
  if (style === 'ietf' || style === 'both') {
    set('RateLimit-Policy', policyHeader ?? rateLimitPolicyHeader(results));
    let value = '';
    for (const r of results) {
      value += `${value ? ', ' : ''}"${r.policy}";r=${r.remaining};t=${seconds(r.resetMs)}`;
    }
    set('RateLimit', value);
  }
  if (style === 'legacy' || style === 'both') {
    const tightest = results[tightestResult(results)];
    set('X-RateLimit-Limit', String(quota(tightest)));
    set('X-RateLimit-Remaining', String(tightest.remaining));
    set('X-RateLimit-Reset', String(seconds(tightest.resetMs)));
  }
}

type PolicyShape = Pick<PolicyResult, 'policy' | 'limit' | 'window' | 'capacity'>;

/**
 * The `RateLimit-Policy` value: the same for every response of a route, so the guard
 * computes it once per route and passes it to rateLimitHeaders.
 */
export function rateLimitPolicyHeader(policies: readonly PolicyShape[]): string {
  return policies
    .map((p) => {
      const q = quota(p);
      // A bucket larger than its limit advertises the time to refill all of it.
      return `"${p.policy}";q=${q};w=${Math.max(1, seconds((p.window * q) / p.limit))}`;
    })
    .join(', ');
}

/** What a client can ever have left: a bucket's burst when it exceeds the limit, so r <= q. */
const quota = (p: PolicyShape): number => Math.max(p.limit, p.capacity);

/** The index of the result the legacy headers describe: fewest remaining, then latest reset. */
export function tightestResult(results: readonly PolicyResult[]): number {
  let tightest = 0;
  for (let i = 1; i < results.length; i++) {
    const a = results[tightest];
    const b = results[i];
    if (a.remaining !== b.remaining ? b.remaining < a.remaining : b.resetMs > a.resetMs) {
      tightest = i;
    }
  }
  return tightest;
}
