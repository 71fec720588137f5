export { RateLimitModule } from './rate-limit.module.js';
export type { RateLimitOptionsFactory } from './rate-limit.module-definition.js';
export { RateLimitGuard } from './rate-limit.guard.js';
export { RoutePlanner, type RoutePlan, type RouteTarget } from './route-planner.js';
export { RateLimit, SkipRateLimit } from './rate-limit.decorator.js';
export { RateLimiter } from './rate-limiter.service.js';
export {
  RateLimitExceededException,
  RateLimitHttpException,
  RateLimitUnavailableException,
  type RateLimitCustomBody,
  type RateLimitErrorBody,
} from './rate-limit.exceptions.js';
export type { RateLimitDenial, RateLimitResponseOption } from './denial-responses.js';
export { RateLimitExceptionFilter } from './rate-limit.filter.js';
export { RateLimitConfigError } from './rate-limit-config.error.js';
export { rateLimitHeaders } from './rate-limit-headers.js';
export { clientIp } from './client-key.js';
export { RATE_LIMITED, RATE_LIMIT_UNAVAILABLE, type RateLimitContextType } from './transports.js';
export { RATE_LIMIT_OPTIONS, RATE_LIMIT_REDIS, RATE_LIMIT_STORE } from './rate-limit.constants.js';
export {
  ALGORITHMS,
  type Algorithm,
  type KeyResolver,
  type LimitResolver,
  type RateLimitPolicy,
} from './rate-limit-policy.interface.js';
export type {
  ClockOption,
  FailureMode,
  HeaderStyle,
  RateLimitModuleOptions,
} from './rate-limit-options.interface.js';
export type { PolicyResult, RateLimitDecision } from './rate-limit-decision.interface.js';
export type {
  RateLimitDecisionEvent,
  RateLimitDecisionHook,
  RateLimitOutcome,
} from './rate-limit-event.interface.js';
export type { RateLimitMeter, RateLimitMeterProvider, RateLimitMetricsOptions } from './metrics.js';
export type { ResolvedRateLimitOptions } from './resolved-options.js';
export type { CostResolver, PerRequestLimits, ResolvedPolicy } from './resolved-policy.js';
export type { RequestLimits } from './request-limits.js';
export type {
  DecideRequest,
  DecisionMode,
  PolicyVerdict,
  RateLimitStore,
  StoreDecision,
} from './stores/rate-limit-store.interface.js';
export { RedisStore } from './stores/redis.store.js';
export { MemoryStore } from './stores/memory.store.js';
