import type { RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';

// The package's declarations are in use, not an implicit `any`: a wrong option fails to compile.
// @ts-expect-error 'sideways' is not a failure mode
export const wrongFailureMode: RateLimitModuleOptions = { failureMode: 'sideways' };
