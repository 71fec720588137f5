import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Cluster, Redis } from 'iovalkey';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';
import { AppController } from './app.controller.js';

const VALKEY = Symbol('VALKEY');

/** The app's own iovalkey client; closed by the app. */
@Module({
  providers: [{ provide: VALKEY, useFactory: () => new Redis(process.env.REDIS_URL!) }],
  exports: [VALKEY],
})
class ValkeyModule implements OnApplicationShutdown {
  constructor(@Inject(VALKEY) private readonly client: Redis) {}
  onApplicationShutdown(): void {
    this.client.disconnect();
  }
}

/** Types only: a Cluster client is accepted too. */
export const clusterOption = () =>
  ({
    redis: new Cluster([{ host: '127.0.0.1', port: 7000 }]),
  }) satisfies RateLimitModuleOptions;

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      imports: [ValkeyModule],
      inject: [VALKEY],
      useFactory: (client: Redis) => ({ redis: client }),
    }),
  ],
  controllers: [AppController],
})
export class AppModule {}
