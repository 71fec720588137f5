/** The resolved module options (`ResolvedRateLimitOptions`). */
export const RATE_LIMIT_OPTIONS = Symbol('RATE_LIMIT_OPTIONS');
/**
 * The Redis client when Redis is used, as given (ioredis, iovalkey or node-redis) or as the
 * module created it from a URL or options (ioredis), else null.
 */
export const RATE_LIMIT_REDIS = Symbol('RATE_LIMIT_REDIS');
/** The `RateLimitStore` deciding requests: Redis or the embedded one. */
export const RATE_LIMIT_STORE = Symbol('RATE_LIMIT_STORE');
/**
 * Where the module reads time (the `clock` option: 'redis', 'local' or a function returning
 * epoch ms). A test overrides it to drive the app's own limits on a virtual clock:
 * `overrideProvider(RATE_LIMIT_CLOCK).useValue(() => virtualNow)`, as `clock: fn` would.
 */
export const RATE_LIMIT_CLOCK = Symbol('RATE_LIMIT_CLOCK');

export const RATE_LIMIT_POLICIES_METADATA = 'nestjs-redis-rate-limiter:policies';
export const SKIP_RATE_LIMIT_METADATA = 'nestjs-redis-rate-limiter:skip';
/** Marks RateLimitGuard and its subclasses, so the global guard yields to one applied by @UseGuards. */
export const RATE_LIMIT_GUARD_METADATA = 'nestjs-redis-rate-limiter:guard';
/** Set on the guard instance RateLimitModule registers as APP_GUARD. */
export const GLOBAL_GUARD = Symbol('RateLimitGuard registered globally');
