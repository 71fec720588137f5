import { Module } from '@nestjs/common';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';
import { AppController } from './app.controller.js';

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: (): RateLimitModuleOptions => ({ redis: process.env.REDIS_URL }),
    }),
  ],
  controllers: [AppController],
})
export class AppModule {}
