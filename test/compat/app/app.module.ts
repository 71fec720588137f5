import { Module } from '@nestjs/common';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';
import { AppController } from './app.controller.js';
import { AppResolver } from './app.resolver.js';
import { graphQLModule } from './graphql-module.js';

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: (): RateLimitModuleOptions => ({ redis: process.env.REDIS_URL }),
    }),
    graphQLModule(),
  ],
  controllers: [AppController],
  providers: [AppResolver],
})
export class AppModule {}
