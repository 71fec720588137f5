import { Query, Resolver } from '@nestjs/graphql';
import { RateLimit } from 'nestjs-redis-rate-limiter';
import { LIMIT } from './app.controller.js';

@Resolver()
export class AppResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ limit: LIMIT, window: '1m' })
  book(): string {
    return 'Dune';
  }
}
