import { Module } from '@nestjs/common';
import { RateLimitModule } from '../lib/index.js';
import { DemoController } from './demo.controller.js';
import { SandboxModule } from './sandbox/sandbox.module.js';

/** METRICS=1: the limiter's OpenTelemetry metrics at /metrics; unset, nothing of them loads. */
const metrics =
  process.env.METRICS === '1' ? (await import('./metrics.js')).prometheusMetrics() : undefined;

/** REDIS_URL set: limits shared by every instance on that Redis; unset: the embedded store. */
@Module({
  imports: [
    RateLimitModule.forRoot({
      redis: process.env.REDIS_URL || undefined,
      policies: [{ name: 'default', limit: 100, window: '1m' }],
      metrics: metrics && { meterProvider: metrics.meterProvider },
    }),
    SandboxModule,
  ],
  controllers: metrics ? [DemoController, metrics.controller] : [DemoController],
})
export class AppModule {}
