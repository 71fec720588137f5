// nestjs-redis-rate-limiter/throttler: a storage for @nestjs/throttler 6, loaded only through
// this subpath, so the package's main entry never needs @nestjs/throttler.
export { RedisThrottlerStorage } from './redis-throttler-storage.js';
export type {
  RedisThrottlerStorageOptions,
  ThrottlerRedisOption,
} from './redis-throttler-storage-options.js';
