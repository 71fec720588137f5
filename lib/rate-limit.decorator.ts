import { SetMetadata } from '@nestjs/common';
import { RATE_LIMIT_POLICIES_METADATA, SKIP_RATE_LIMIT_METADATA } from './rate-limit.constants.js';
import type { RateLimitPolicy } from './interfaces/rate-limit-policy.interface.js';

/**
 * Limits a controller or a handler (the handler's policies replace the controller's).
 * Policies are validated when the application starts; scope defaults to `'route'`.
 */
export const RateLimit = (...policies: RateLimitPolicy[]) =>
  SetMetadata(RATE_LIMIT_POLICIES_METADATA, policies);

/** Exempts a controller or handler from the named policies, or from all when none are named. */
export const SkipRateLimit = (...names: string[]) =>
  SetMetadata(SKIP_RATE_LIMIT_METADATA, names.length > 0 ? names : true);
