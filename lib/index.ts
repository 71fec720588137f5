export { RateLimitModule } from './rate-limit.module.js';
export type { RateLimitOptionsFactory } from './rate-limit.module-definition.js';
export { RateLimitGuard } from './guard/rate-limit.guard.js';
export { RoutePlanner, type RoutePlan, type RouteTarget } from './guard/route-planner.js';
export { RateLimit, SkipRateLimit } from './rate-limit.decorator.js';
export { RateLimiter } from './limiter/rate-limiter.service.js';
export {
  RateLimitExceededException,
  RateLimitHttpException,
  RateLimitUnavailableException,
  type RateLimitCustomBody,
  type RateLimitErrorBody,
} from './rate-limit.exceptions.js';
export type { RateLimitDenial, RateLimitResponseOption } from './guard/denial-responses.js';
export { RateLimitExceptionFilter } from './rate-limit.filter.js';
export { RateLimitConfigError } from './config/rate-limit-config.error.js';
export { rateLimitHeaders } from './guard/rate-limit-headers.js';
export { clientIp } from './stores/store-keys.js';
export {
  RATE_LIMITED,
  RATE_LIMIT_UNAVAILABLE,
  type RateLimitContextType,
} from './guard/transports.js';
export { RATE_LIMIT_OPTIONS, RATE_LIMIT_REDIS, RATE_LIMIT_STORE } from './rate-limit.constants.js';
export {
  ALGORITHMS,
  type Algorithm,
  type KeyResolver,
  type LimitResolver,
  type RateLimitPolicy,
} from './interfaces/rate-limit-policy.interface.js';
export type {
  ClockOption,
  FailureMode,
  HeaderStyle,
  RateLimitModuleOptions,
} from './interfaces/rate-limit-options.interface.js';
export type {
  PolicyResult,
  RateLimitDecision,
} from './interfaces/rate-limit-decision.interface.js';
export type {
  RateLimitDecisionEvent,
  RateLimitDecisionHook,
  RateLimitOutcome,
} from './interfaces/rate-limit-event.interface.js';
export type {
  RateLimitMeter,
  RateLimitMeterProvider,
  RateLimitMetricsOptions,
} from './observability/rate-limit-metrics.js';
export type { ResolvedRateLimitOptions } from './config/resolved-options.js';
export type { CostResolver, PerRequestLimits, ResolvedPolicy } from './config/resolved-policy.js';
export type { RequestLimits } from './guard/request-limits.js';
export type {
  DecideRequest,
  DecisionMode,
  PolicyVerdict,
  RateLimitStore,
  StoreDecision,
} from './interfaces/rate-limit-store.interface.js';
export { RedisStore } from './stores/redis/redis.store.js';
export { MemoryStore } from './stores/memory/memory.store.js';
