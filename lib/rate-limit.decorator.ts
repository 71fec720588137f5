import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { RATE_LIMIT_POLICIES_METADATA, SKIP_RATE_LIMIT_METADATA } from './rate-limit.constants.js';
import type { RateLimitPolicy } from './interfaces/rate-limit-policy.interface.js';
import { RateLimitOutcomeInterceptor } from './guard/outcome.interceptor.js';

/**
 * Limits a controller or a handler (the handler's policies replace the controller's).
 * Policies are validated when the application starts; scope defaults to `'route'`. Where a
 * policy counts by outcome (`count`), it also adds RateLimitOutcomeInterceptor, which tells
 * the guard how GraphQL, WebSocket and microservice handlers end; other routes get nothing.
 */
export const RateLimit = (...policies: RateLimitPolicy[]) =>
  policies.some((policy) => policy?.count !== undefined && policy.count !== 'all')
    ? applyDecorators(
        SetMetadata(RATE_LIMIT_POLICIES_METADATA, policies),
        UseInterceptors(RateLimitOutcomeInterceptor),
      )
    : SetMetadata(RATE_LIMIT_POLICIES_METADATA, policies);

/** Exempts a controller or handler from the named policies, or from all when none are named. */
export const SkipRateLimit = (...names: string[]) =>
  SetMetadata(SKIP_RATE_LIMIT_METADATA, names.length > 0 ? names : true);
