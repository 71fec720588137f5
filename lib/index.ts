// The package's public API: everything a user imports. What is marked "for subclassing" is
// what a guard or store of the app's own builds on (docs/extending.md lists it).

// The Nest surface: module, decorators, guard, service, filter, exceptions, tokens.
export { RateLimitModule } from './rate-limit.module.js';
export type { RateLimitOptionsFactory } from './rate-limit.module-definition.js';
export { RateLimit, SkipRateLimit } from './rate-limit.decorator.js';
export { RateLimitGuard } from './guard/rate-limit.guard.js';
export { RateLimitOutcomeInterceptor } from './guard/outcome.interceptor.js';
export { RateLimiter } from './limiter/rate-limiter.service.js';
export {
  RateLimitHealthIndicator,
  type RateLimitHealthDetails,
} from './rate-limit-health.indicator.js';
export { RateLimitExceptionFilter } from './rate-limit.filter.js';
export {
  RateLimitExceededException,
  RateLimitHttpException,
  RateLimitUnavailableException,
} from './rate-limit.exceptions.js';
export { RateLimitConfigError } from './config/rate-limit-config.error.js';
export {
  RATE_LIMIT_CLOCK,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_REDIS,
  RATE_LIMIT_STORE,
} from './rate-limit.constants.js';

// Helpers for apps: headers for a RateLimiter decision, the default key, transport codes.
export { rateLimitHeaders } from './guard/rate-limit-headers.js';
export { clientIp } from './guard/client-ip.js';
export { RATE_LIMITED, RATE_LIMIT_UNAVAILABLE } from './guard/transport-errors.js';

// Options, policies and answers.
export {
  ALGORITHMS,
  type Algorithm,
  type FailureMode,
  type FailureTest,
  type KeyResolver,
  type LimitResolver,
  type OutcomeCount,
  type RateLimitPolicy,
} from './interfaces/rate-limit-policy.interface.js';
export type {
  ClockOption,
  HeaderStyle,
  RateLimitContextType,
  RateLimitModuleOptions,
} from './interfaces/rate-limit-options.interface.js';
export type {
  GlideLikeClient,
  IoredisLikeClient,
  NodeRedisLikeClient,
  NodeRedisLikeCluster,
  RedisClientLike,
  RedisConnectionOptions,
} from './interfaces/redis-client.interface.js';
export type {
  PolicyResult,
  RateLimitDecision,
} from './interfaces/rate-limit-decision.interface.js';
export type {
  RateLimitCustomBody,
  RateLimitDenial,
  RateLimitErrorBody,
  RateLimitOpenApiOptions,
  RateLimitOpenApiSchema,
  RateLimitResponseOption,
} from './interfaces/rate-limit-response.interface.js';
export type {
  RateLimitDecisionEvent,
  RateLimitDecisionHook,
  RateLimitOutcome,
} from './interfaces/rate-limit-event.interface.js';
export type {
  ObservableResult,
  RateLimitMeter,
  RateLimitMeterProvider,
  RateLimitMetricAttributes,
  RateLimitMetricsOptions,
} from './interfaces/rate-limit-metrics.interface.js';
export type { RateLimitStoreStatus } from './interfaces/rate-limit-store-status.interface.js';
export type { ResolvedRateLimitOptions } from './config/resolved-options.js';

// For subclassing RateLimitGuard: the route plan its protected hooks receive.
export { RoutePlanner, type RoutePlan, type RouteTarget } from './guard/route-planner.js';
export type { RequestLimits } from './guard/request-limits.js';
export type {
  CostResolver,
  PerRequestLimits,
  ResolvedPolicy,
} from './interfaces/resolved-policy.interface.js';

// For a store of the app's own (the `store` option), and the two the package ships.
export type {
  DecideRequest,
  DecisionMode,
  GiveBackRequest,
  LeaseGrant,
  LeaseTerms,
  PolicyVerdict,
  RateLimitStore,
  RefundRequest,
  StoreDecision,
} from './interfaces/rate-limit-store.interface.js';
export { RedisStore } from './stores/redis/redis.store.js';
export { MemoryStore } from './stores/memory/memory.store.js';
