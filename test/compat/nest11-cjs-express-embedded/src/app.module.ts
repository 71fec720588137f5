import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nestjs-redis-rate-limiter';
import { AppController } from './app.controller.js';

/** No redis option and no Redis client installed: the embedded in-process store. */
@Module({
  imports: [RateLimitModule.forRoot({})],
  controllers: [AppController],
})
export class AppModule {}
