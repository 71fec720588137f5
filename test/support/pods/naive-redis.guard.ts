import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  HttpStatus,
  Injectable,
} from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { PodRoutePolicy } from './pod-config.js';

/**
 * The baseline most hand-written limiters start as: read the window's count, compare, then
 * increment, in separate round trips. Requests on different pods read the same count before
 * any of them increments it, so the budget leaks under concurrency. Fixed window only,
 * whatever algorithm the route names; never use this outside the benchmark.
 */
@Injectable()
export class NaiveRedisGuard implements CanActivate {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** The route policy of each handler function. */
    private readonly policies: ReadonlyMap<unknown, PodRoutePolicy & { route: string }>,
    private readonly clientKey: (context: ExecutionContext) => string,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const policy = this.policies.get(context.getHandler());
    if (!policy) return true;
    const window = Math.floor(Date.now() / policy.windowMs);
    const key = `${this.prefix}:naive:${this.clientKey(context)}:${policy.route}:${window}`;
    const count = Number((await this.redis.get(key)) ?? 0);
    if (count >= policy.limit) {
      throw new HttpException('Too Many Requests', HttpStatus.TOO_MANY_REQUESTS);
    }
    await this.redis.multi().incr(key).pexpire(key, policy.windowMs).exec();
    return true;
  }
}
