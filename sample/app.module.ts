import { Module } from '@nestjs/common';
import { RateLimitModule } from '../lib/index.js';
import { DemoController } from './demo.controller.js';
import { SandboxModule } from './sandbox/sandbox.module.js';

/** REDIS_URL set: limits shared by every instance on that Redis; unset: the embedded store. */
@Module({
  imports: [
    RateLimitModule.forRoot({
      redis: process.env.REDIS_URL || undefined,
      policies: [{ name: 'default', limit: 100, window: '1m' }],
    }),
    SandboxModule,
  ],
  controllers: [DemoController],
})
export class AppModule {}
